"""The root ``natsobj`` command: connection options, then one sub-command per job."""

from __future__ import annotations

import logging
import sys

import click

from natsobj.cli.commands import (
    archive,
    gateway,
    lifecycle,
    objects,
    presign,
    serve,
    stores,
    syncing,
    transfer,
    versions,
    watch,
)
from natsobj.cli.exits import NatsobjGroup
from natsobj.cli.session import Session, connection_options

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=NatsobjGroup, context_settings=CONTEXT)
@connection_options
@click.option("--debug", is_flag=True, help="Show the full traceback when a command fails.")
@click.version_option(package_name="natsobj", prog_name="natsobj")
@click.pass_context
def cli(ctx: click.Context, url: str | None, debug: bool, **overrides: object) -> None:
    """Inspect and move pipeline artifacts in NATS JetStream object stores.

    Exit codes: 0 ok, 1 failure, 2 usage error, 3 bucket or object not found,
    4 digest mismatch, 5 connection or permission problem.
    """
    ctx.obj = Session(url=url, overrides={k: v for k, v in overrides.items() if v is not None})
    _route_library_logs(ctx, debug)


def _route_library_logs(ctx: click.Context, debug: bool) -> None:
    """The core logs warnings a failing command also reports as its error line; show them
    only with --debug, and put things back afterwards (the CLI can run in-process)."""
    logger = logging.getLogger("natsobj")
    level, propagate = logger.level, logger.propagate
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("natsobj[%(levelname)s] %(name)s: %(message)s"))
    if debug:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.setLevel(logging.CRITICAL)
    logger.propagate = False

    def restore() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate

    ctx.call_on_close(restore)


for module in (
    serve,
    stores,
    lifecycle,
    objects,
    transfer,
    syncing,
    watch,
    archive,
    gateway,
    presign,
    versions,
):
    for command in module.COMMANDS:
        cli.add_command(command)
stores.store_group.add_command(versions.versioning)
cli.add_command(objects.rm, "del")  # as `nats obj del BUCKET NAME` deletes an object
