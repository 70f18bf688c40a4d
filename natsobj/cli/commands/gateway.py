"""``natsobj gateway``: an S3-compatible endpoint in front of NATS object stores, in the
foreground until Ctrl-C. The root command's connection options say which NATS server and the
gateway's own identity; each access key of ``--credentials`` may act as another identity."""

from __future__ import annotations

from pathlib import Path

import click

from natsobj.cli.exits import UsageProblem
from natsobj.cli.session import Session, pass_session


@click.command("gateway")
@click.option(
    "--listen",
    default="127.0.0.1:9000",
    show_default=True,
    metavar="HOST:PORT",
    help="Address to serve S3 on.",
)
@click.option(
    "--credentials",
    "credentials_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file of access keys: [keys.<ACCESS_KEY_ID>] with secret and, optionally, the "
    "NATS identity (user/password, token, nkey_seed, creds_file) the key acts as. Must be "
    "readable by you alone.",
)
@click.option(
    "--domain",
    default=None,
    metavar="DOMAIN",
    help="Serve virtual-host-style requests for <bucket>.DOMAIN too (path style always works).",
)
@pass_session
def gateway(session: Session, listen: str, credentials_file: Path, domain: str | None) -> None:
    """Serve the S3 REST API (SigV4-signed) over the object stores of the NATS server."""
    # imported here: the gateway's HTTP server is loaded only by the command that serves
    from natsobj.gateway.server import parse_listen, serve

    try:
        parse_listen(listen)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    serve(session.settings, credentials_file, listen=listen, domain=domain)


COMMANDS = (gateway,)
