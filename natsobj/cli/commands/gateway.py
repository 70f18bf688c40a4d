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
@click.option(
    "--tls-cert",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Serve HTTPS with this PEM certificate (chain after it). The root command's "
    "--tls-cert is the NATS connection's, not this.",
)
@click.option(
    "--tls-key",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The PEM private key of --tls-cert (omit when the certificate file holds it).",
)
@pass_session
def gateway(
    session: Session,
    listen: str,
    credentials_file: Path,
    domain: str | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> None:
    """Serve the S3 REST API (SigV4-signed) over the object stores of the NATS server."""
    # imported here: the gateway's HTTP server is loaded only by the command that serves
    from natsobj.gateway.server import parse_listen, serve, tls_context

    try:
        parse_listen(listen)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if tls_key is not None and tls_cert is None:
        raise UsageProblem("--tls-key needs --tls-cert")
    tls = tls_context(tls_cert, tls_key) if tls_cert is not None else None
    serve(session.settings, credentials_file, listen=listen, domain=domain, tls=tls)


COMMANDS = (gateway,)
