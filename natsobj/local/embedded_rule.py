"""Which server settings reach, for the layer that connects: the embedded-server rule every
face shares.

``ConnectionSettings`` only parses and validates; this is where an ``embedded`` or
``embedded-if-running`` server list becomes the embedded server's real URL, which may mean
starting it. The client's connect comes through here, and so does every face that hands
settings to another process (Spark executors, the Dagster Spark handler): with nothing naming a
server, the embedded server already running for this directory is used (NoServer when there is
none); only ``embedded`` starts one, and the start says, as a warning, where it runs and how to
stop it, since it outlives the process. The embedded server admits only the nkey generated for
its data directory, so its seed is filled in here unless the settings bring their own
credentials.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

from natsobj.errors import NoServer
from natsobj.local.embedded import ensure_server, running_server
from natsobj.settings import ConnectionSettings

log = logging.getLogger("natsobj")


def resolve_server(settings: ConnectionSettings) -> ConnectionSettings:
    """``settings`` with ``embedded`` replaced by the embedded server's real URL (and its
    nkey seed); settings naming a real server are returned as they are."""
    data_dir = settings.embedded_dir
    if data_dir is None:
        return settings
    server = ensure_server(data_dir) if settings.starts_embedded else running_server(data_dir)
    if server is None:
        raise NoServer(
            f"no NATS server given (no url, no NATS_URL) and no embedded server is "
            f"running for {data_dir}; natsobj starts one only when asked"
        )
    if not settings.starts_embedded and server.credentials is None:
        raise NoServer(
            f"the embedded server running for {data_dir} (pid {server.pid}) was "
            "started by an older natsobj, without the key this one signs in with",
            hint=f"Restart it: `natsobj serve --stop --data-dir {data_dir}`, then "
            "`natsobj serve` (or give the URL 'embedded', which restarts it).",
        )
    _announce(data_dir, server.url, server.pid, started=server.started)
    resolved = replace(settings, servers=[server.url])
    own = settings.user or settings.token or settings.nkey_seed or settings.creds_file
    if own or server.credentials is None:
        return resolved
    return replace(resolved, nkey_seed=server.credentials.seed)


_announced: set[tuple[int, Path]] = set()


def _announce(data_dir: Path, url: str, pid: int, *, started: bool) -> None:
    """A start is a warning (the server outlives this process: how to stop it); using one
    that runs is said once per process and data directory, at info level."""
    if started:
        log.warning(
            "natsobj started the embedded NATS server at %s (pid %d), keeping its data in %s; "
            "it keeps running after this process: stop it with `natsobj serve --stop "
            "--data-dir %s` (or all of yours with `natsobj serve --stop-all`)",
            url,
            pid,
            data_dir,
            data_dir,
        )
    key = (os.getpid(), data_dir)
    if key in _announced:
        return
    _announced.add(key)
    log.info(
        "natsobj is using the embedded NATS server at %s; its data is kept on this machine in "
        "%s. To use a real server, set NATS_URL (or the url of the Airflow connection, Dagster "
        "resource, Spark option or fsspec filesystem) to nats://HOST:4222.",
        url,
        data_dir,
    )
