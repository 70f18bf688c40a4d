"""``natsobj serve``: the embedded JetStream server in the foreground, for local work.

The single server is registered for its data directory, so other ``natsobj`` commands (and
pipelines without a URL) run from the same place find it without any setting, and sign in with
the nkey generated for that directory (the server admits no one else). Each start is also
listed in this user's registry of embedded servers: ``--list`` shows the running ones,
``--stop-all`` stops them (a pipeline given the URL ``embedded`` starts one that outlives it). With
``--cluster N`` it runs N clustered nodes instead, so failover can be tried on a laptop: their
URL is printed for ``--url`` / ``NATS_URL``, and each node's PID for ``kill -9``. With
``--gateway`` the S3 gateway serves in front of the single server too, in the same process, with
the access key generated in the data directory: a local S3 endpoint in one command.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import click

from natsobj.cli.commands.gateway import DEFAULT_LISTEN, announcer
from natsobj.cli.exits import CliError, ExitCode, UsageProblem
from natsobj.local.embedded import (
    CREDENTIALS_FILE,
    NatsCluster,
    ensure_server,
    gateway_keys_file,
    registered_servers,
    running_server,
    stop_server,
)
from natsobj.placement import wait_until_placeable
from natsobj.settings import RUNNING_EMBEDDED, ConnectionSettings

POLL_SECONDS = 0.5
CLUSTER_DIR = "cluster"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@click.command("serve")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="NATSOBJ_DATA_DIR",
    default=".natsobj",
    show_default=True,
    help="Where JetStream keeps its data (or $NATSOBJ_DATA_DIR).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Listen on this loopback port (default: a free one); with --cluster, the first "
    "node's, the others on the ports after it.",
)
@click.option(
    "--cluster",
    "nodes",
    type=click.IntRange(1, 9),
    default=None,
    metavar="N",
    help="Run N clustered nodes (routes and JetStream on each) for replicated stores.",
)
@click.option(
    "--gateway",
    "gateway_listen",
    is_flag=False,
    flag_value=DEFAULT_LISTEN,
    default=None,
    metavar="[HOST:PORT]",
    help=f"Serve the S3 gateway in front of it too, on HOST:PORT (default {DEFAULT_LISTEN}), "
    "with the access key generated in the data directory (gateway.toml).",
)
@click.option(
    "--stop",
    is_flag=True,
    help="Stop the embedded server of --data-dir instead: also the one a pipeline started in "
    "the background for an 'embedded' URL.",
)
@click.option(
    "--list",
    "list_all",
    is_flag=True,
    help="List your running embedded servers (data directory, URL, pid) instead.",
)
@click.option(
    "--stop-all", is_flag=True, help="Stop every embedded server of yours that --list shows."
)
def serve(
    data_dir: Path,
    port: int | None,
    nodes: int | None,
    gateway_listen: str | None,
    stop: bool,
    list_all: bool,
    stop_all: bool,
) -> None:
    """Run the embedded nats-server (or a cluster of them) in the foreground until Ctrl-C."""
    data_dir = data_dir.resolve()
    if list_all:
        for live in registered_servers():
            click.echo(f"{live.data_dir}\t{live.url}\tpid {live.pid}")
        return
    if stop_all:
        for live in registered_servers():
            _stop(live.data_dir)
        return
    if stop:
        _stop(data_dir)
        return
    if gateway_listen is not None and nodes is not None:
        raise UsageProblem("--gateway serves the single embedded server; not with --cluster")
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if nodes is None:
            _serve_one(data_dir, port, gateway_listen)
        else:
            _serve_cluster(data_dir / CLUSTER_DIR, nodes, port)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(data_dir: Path) -> None:
    """Idempotent, for scripts and ``make clean``: nothing running is said, not an error. Only
    a nats-server of this user proven to serve ``data_dir`` is signalled (see
    ``natsobj.local.embedded.running_server``), whatever pid the record names."""
    live = running_server(data_dir)
    if live is None or not stop_server(data_dir):
        click.echo(f"no embedded server is running for {data_dir}", err=True)
        return
    click.echo(f"stopped the embedded server for {data_dir} ({live.url}, pid {live.pid})", err=True)


def _serve_one(data_dir: Path, port: int | None, gateway_listen: str | None) -> None:
    gateway = None if gateway_listen is None else _prepare_gateway(data_dir, gateway_listen)
    live = running_server(data_dir)
    if live is not None:
        raise CliError(
            f"an embedded server is already running for {data_dir} at {live.url} (pid {live.pid}); "
            "use it, or stop it first",
            ExitCode.FAILED,
        )
    try:  # from here on, Ctrl-C (even one sent the moment the URL appears) stops cleanly
        server = ensure_server(data_dir, port=port)
        click.echo(server.url)
        click.echo(
            f"serving {data_dir} (pid {server.pid}); other clients need the nkey seed in "
            f"{data_dir / CREDENTIALS_FILE}; Ctrl-C to stop",
            err=True,
        )
        if gateway is not None and _serve_gateway(data_dir, *gateway):
            stop_server(data_dir)
            click.echo("stopped", err=True)
            return
        while running_server(data_dir) is not None:
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        stop_server(data_dir)
        click.echo("stopped", err=True)
        return
    raise CliError(
        f"the server for {data_dir} exited unexpectedly; see {data_dir}/server.log",
        ExitCode.CONNECTION,
    )


def _prepare_gateway(data_dir: Path, listen: str) -> tuple[str, Path, Callable[[str], None]]:
    """What ``--gateway`` needs, checked before a server is started for nothing: the gateway
    extra, the address, and the data directory's key (generated now on first use; refused when
    unsafe)."""
    # imported here: the gateway's HTTP server (the gateway extra) only for --gateway
    from natsobj.gateway.server import parse_listen

    try:
        parse_listen(listen)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    keys = gateway_keys_file(data_dir)
    return listen, keys, announcer(keys, data_dir, listen)


def _serve_gateway(
    data_dir: Path, listen: str, keys: Path, announce: Callable[[str], None]
) -> bool:
    """The S3 gateway in front of the server of ``data_dir`` until Ctrl-C (True) or until the
    server is gone (False); a gateway that cannot start stops the server it was started with."""
    from natsobj.gateway.server import serve as serve_gateway

    settings = ConnectionSettings(servers=[f"{RUNNING_EMBEDDED}://{data_dir}"])
    try:
        return serve_gateway(
            settings,
            keys,
            listen=listen,
            announce=announce,
            alive=lambda: running_server(data_dir) is not None,
        )
    except OSError as exc:
        stop_server(data_dir)
        raise CliError(
            f"the S3 gateway cannot listen on {listen}: {exc.strerror or exc}; the embedded "
            f"server of {data_dir} is stopped again",
            ExitCode.FAILED,
        ) from None
    except Exception:
        stop_server(data_dir)
        raise


def _serve_cluster(data_dir: Path, size: int, port: int | None) -> None:
    """Serve until Ctrl-C; a node that dies (say, to a ``kill -9``) is reported and left down,
    so what the cluster does without it can be watched."""
    cluster = NatsCluster(data_dir, size, client_port=port, detach=True)
    try:
        cluster.start()
        wait_until_placeable(cluster.url, replicas=min(size, 3))
        click.echo(cluster.url)
        for index, node in enumerate(cluster.nodes):
            click.echo(
                f"{cluster.node_name(index)}: {cluster.urls[index]} (pid {node.pid}, "
                f"data {node.data_dir})",
                err=True,
            )
        click.echo(
            f"serving a {size}-node cluster; create stores with replicas={min(size, 3)}; "
            "Ctrl-C to stop",
            err=True,
        )
        alive = set(range(size))
        while alive:
            for index in sorted(alive):
                if not cluster.is_running(index):
                    alive.discard(index)
                    click.echo(
                        f"{cluster.node_name(index)} exited (pid {cluster.pids[index]}); "
                        f"{len(alive)} of {size} nodes left",
                        err=True,
                    )
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        cluster.stop()
        click.echo("stopped", err=True)
        return
    except BaseException:
        cluster.stop()
        raise
    raise CliError(
        f"every node of the cluster in {data_dir} has exited; see <node>/server.log there",
        ExitCode.CONNECTION,
    )


COMMANDS = (serve,)
