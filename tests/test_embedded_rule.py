"""The embedded-server rule every face shares: with no URL, the local server is used, and the
process says once, as a warning, where the data lives and how to point at a real server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from natsobj.embedded import stop_server

NO_URL_EVERYWHERE = textwrap.dedent(
    """
    import logging
    import fsspec
    import natsobj
    from dagster_natsobj import NatsObjectStoreResource

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    with natsobj.connect() as client:  # no URL, no NATS_URL: the embedded server
        client.ensure_store("rule")
    with NatsObjectStoreResource().get_client() as client:  # Dagster's default
        client.cached_store("rule").put("a", b"1")
    print("LISTED", fsspec.filesystem("nats", skip_instance_cache=True).ls("rule", detail=False))
    """
)


def test_implicit_embedded_server_warns_once_per_process_with_the_data_dir(tmp_path: Path):
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env["NATSOBJ_DATA_DIR"] = str(data_dir)
    try:
        done = subprocess.run(
            [sys.executable, "-c", NO_URL_EVERYWHERE],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
    finally:
        stop_server(data_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LISTED ['rule/a']" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if "embedded NATS server" in line]
    assert len(warnings) == 1, done.stderr[-3000:]
    [warning] = warnings
    assert warning.startswith("WARNING natsobj")
    assert str(data_dir) in warning and "NATS_URL" in warning and "nats://HOST:4222" in warning
