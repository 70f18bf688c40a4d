"""``natsobj serve``: the embedded JetStream server in the foreground, for local work.

The server is registered for its data directory, so other ``natsobj`` commands (and
``embedded`` URLs in pipelines) run from the same place find it without any setting.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType

import click

from natsobj.cli.exits import CliError, ExitCode
from natsobj.embedded import ensure_server, running_server, stop_server

POLL_SECONDS = 0.5


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
    help="Listen on this loopback port (default: a free one).",
)
def serve(data_dir: Path, port: int | None) -> None:
    """Run the embedded nats-server in the foreground until Ctrl-C."""
    data_dir = data_dir.resolve()
    live = running_server(data_dir)
    if live is not None:
        raise CliError(
            f"an embedded server is already running for {data_dir} at {live.url} (pid {live.pid}); "
            "use it, or stop it first",
            ExitCode.FAILED,
        )
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:  # from here on, Ctrl-C (even one sent the moment the URL appears) stops cleanly
        server = ensure_server(data_dir, port=port)
        click.echo(server.url)
        click.echo(f"serving {data_dir} (pid {server.pid}); Ctrl-C to stop", err=True)
        while running_server(data_dir) is not None:
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        stop_server(data_dir)
        click.echo("stopped", err=True)
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
    raise CliError(
        f"the server for {data_dir} exited unexpectedly; see {data_dir}/server.log",
        ExitCode.CONNECTION,
    )


COMMANDS = (serve,)
