"""``natsobj gateway``: an S3-compatible endpoint in front of NATS object stores, in the
foreground until Ctrl-C. The root command's connection options say which NATS server and the
gateway's own identity; each access key of ``--credentials`` may act as another identity.

In front of the embedded server no file is needed: the server's data directory keeps one
generated key (``natsobj.local.embedded.gateway_keys_file``), which ``natsobj serve --gateway`` uses
too, and ``--print-env`` prints the shell lines that hand it to S3 clients. Without
``--credentials``, a key in the environment (``NATSOBJ_GATEWAY_ACCESS_KEY`` and
``NATSOBJ_GATEWAY_SECRET``) comes first.

The production flags (docs/gateway.md, "In production"): ``--workers``, the connection bounds
(natsobj.gateway.limits), ``--metrics``, ``--health`` and ``--access-log``."""

from __future__ import annotations

import importlib.util
import os
import shlex
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from natsobj.cli.exits import CliError, UsageProblem
from natsobj.cli.session import Session, pass_session
from natsobj.errors import MissingExtra
from natsobj.local.embedded import gateway_keys_file
from natsobj.s3 import access_keys
from natsobj.s3.gateway_limits import Limits
from natsobj.s3.sigv4 import DEFAULT_REGION
from natsobj.settings import DATA_DIR_ENV, DEFAULT_DATA_DIR, ConnectionSettings

DEFAULT_LISTEN = "127.0.0.1:9000"


def limit_options(command: Callable[..., None]) -> Callable[..., None]:
    """An option per row of ``Limits`` (``--max-connections``, ``--header-timeout``, ...), its
    default and help the row's."""
    for bound in reversed(fields(Limits)):
        seconds = bound.metadata["seconds"]
        command = click.option(
            "--" + bound.name.replace("_", "-"),
            bound.name,
            type=click.FloatRange(min=0, min_open=not bound.metadata["zero"])
            if seconds
            else click.IntRange(min=1),
            default=bound.default,
            show_default=True,
            metavar="SECONDS" if seconds else None,
            help=bound.metadata["help"],
        )(command)
    return command


@click.command("gateway")
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    metavar="HOST:PORT",
    help="Address to serve S3 on.",
)
@click.option(
    "--credentials",
    "credentials_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file of access keys: [keys.<ACCESS_KEY_ID>] with secret and, optionally, the "
    "NATS identity (user/password, token, nkey_seed, creds_file) the key acts as. Must be "
    "readable by you alone, or a file of a mounted Kubernetes/Docker secret. Default: the key "
    "of NATSOBJ_GATEWAY_ACCESS_KEY and NATSOBJ_GATEWAY_SECRET; else, in front of the embedded "
    "server only, the key generated in its data directory (gateway.toml).",
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
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes serving the port.  [default: one per core]",
)
@limit_options
@click.option(
    "--metrics", is_flag=True, help="Serve Prometheus metrics on /metrics (unsigned GET)."
)
@click.option("--health", is_flag=True, help="Serve /health/live and /health/ready (unsigned GET).")
@click.option(
    "--access-log",
    default=None,
    metavar="FILE|-",
    help="Append a JSON line per request to FILE (- for stdout).",
)
@click.option(
    "--access-key",
    default=None,
    metavar="ID",
    help="With --print-env: the key of the credentials file to print (needed when it holds "
    "several).",
)
@click.option(
    "--print-env",
    is_flag=True,
    help="Print the shell lines that point S3 clients and `natsobj presign` at this gateway "
    '(endpoint, access key and secret: eval "$(natsobj gateway --print-env)") instead of '
    "serving.",
)
@pass_session
def gateway(
    session: Session,
    listen: str,
    credentials_file: Path | None,
    domain: str | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    workers: int | None,
    metrics: bool,
    health: bool,
    access_log: str | None,
    access_key: str | None,
    print_env: bool,
    **bounds: Any,
) -> None:
    """Serve the S3 REST API (SigV4-signed) over the object stores of the NATS server."""
    # imported here: the gateway's HTTP server is loaded only by the command that serves
    from natsobj.gateway.observability import Observability
    from natsobj.gateway.server import parse_listen, serve, tls_context
    from natsobj.gateway.workers import default_count

    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if tls_key is not None and tls_cert is None:
        raise UsageProblem("--tls-key needs --tls-cert")
    tls = tls_context(tls_cert, tls_key) if tls_cert is not None else None
    if metrics:
        _require_prometheus_client()
    settings = session.settings
    from_env = access_keys.from_environment() if credentials_file is None else None
    embedded = credentials_file is None and from_env is None
    keys_file = credentials_file or (None if from_env else embedded_keys(settings))
    if access_key is not None and not print_env:
        raise UsageProblem("--access-key goes with --print-env (serving uses every key)")
    keys = from_env or access_keys.load(keys_file)  # type: ignore[arg-type]
    if print_env:
        key = access_keys.choose(keys.keys, access_key, str(keys_file or "the environment"))
        scheme = "https" if tls is not None else "http"
        click.echo(environment_lines(f"{scheme}://{_bracketed(host)}:{port}", key))
        return
    announce = (
        announcer(keys_file, settings.embedded_dir, listen)
        if embedded and keys_file is not None
        else None
    )
    limits = Limits(**{bound.name: bounds[bound.name] for bound in fields(Limits)})
    stopped = serve(
        settings,
        keys,
        listen=listen,
        domain=domain,
        tls=tls,
        limits=limits,
        observability=Observability(metrics=metrics, health=health, access_log=access_log),
        workers_count=workers or default_count(),
        announce=announce,
    )
    if not stopped:
        raise CliError("a gateway worker failed as it started; its log says why")


def _require_prometheus_client() -> None:
    """--metrics needs prometheus_client (in the gateway extra): said before serving. Found,
    not imported: its multiprocess mode is chosen when it is first imported, in the workers."""
    if importlib.util.find_spec("prometheus_client") is None:
        raise UsageProblem(
            f"--metrics needs prometheus_client: {MissingExtra.install_line('gateway')}"
        )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def embedded_keys(settings: ConnectionSettings) -> Path:
    """The embedded server's generated key file; without ``--credentials`` a gateway in front
    of any other server would have no key at all."""
    data_dir = settings.embedded_dir
    if data_dir is None:
        raise UsageProblem(
            "--credentials FILE is required for a gateway in front of "
            f"{settings.redacted_url()}; only the embedded server keeps a key of its own"
        )
    return gateway_keys_file(data_dir)


def environment_lines(endpoint: str, key: access_keys.AccessKey) -> str:
    """``export`` lines for the AWS CLI and SDKs (boto3, polars, pyarrow read ``AWS_*``) and for
    natsobj's own presigned URLs (``NATSOBJ_GATEWAY_*``)."""
    values = {
        "AWS_ACCESS_KEY_ID": key.access_key,
        "AWS_SECRET_ACCESS_KEY": key.secret,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": DEFAULT_REGION,
        "AWS_ALLOW_HTTP": "true" if endpoint.startswith("http://") else "false",
        "NATSOBJ_GATEWAY_URL": endpoint,
        "NATSOBJ_GATEWAY_ACCESS_KEY": key.access_key,
        "NATSOBJ_GATEWAY_SECRET": key.secret,
    }
    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in values.items())


def announcer(keys: Path, data_dir: Path | None, listen: str) -> Callable[[str], None]:
    """What a gateway with the embedded server's generated key says when it serves: the
    endpoint, the access key, where the secret is and the line that exports both (the secret
    itself is never printed unasked)."""
    key = access_keys.choose(access_keys.load(keys).keys, None, str(keys))
    command = ["natsobj"]
    default_dir = Path(os.environ.get(DATA_DIR_ENV, DEFAULT_DATA_DIR)).resolve()
    if data_dir is not None and data_dir != default_dir:
        command += ["--url", f"embedded-if-running://{data_dir}"]
    command += ["gateway", "--print-env"]
    if listen != DEFAULT_LISTEN:
        command += ["--listen", listen]

    def announce(endpoint: str) -> None:
        click.echo(f"S3 gateway on {endpoint}")
        click.echo(
            f"access key {key.access_key}, its secret in {keys}; for the AWS CLI, SDKs and "
            f'natsobj presign: eval "$({shlex.join(command)})"',
            err=True,
        )

    return announce


COMMANDS = (gateway,)
