"""``natsobj presign``: a presigned URL of one object at the S3 gateway, as ``aws s3 presign``
prints one: anyone holding it reads the object with a plain HTTP GET until it expires.

The endpoint, access key and secret come from the options, else the settings
(``NATSOBJ_GATEWAY_URL``, ``NATSOBJ_GATEWAY_ACCESS_KEY``, ``NATSOBJ_GATEWAY_SECRET``), else the
embedded server's generated gateway key (``natsobj.s3.presign``). Made locally, no request
sent; the signature is the one the gateway checks (``natsobj.s3.sigv4``)."""

from __future__ import annotations

from pathlib import Path

import click

from natsobj.cli.exits import UsageProblem
from natsobj.cli.operands import nats_location
from natsobj.cli.session import Session, pass_session
from natsobj.s3.presign import gateway_access, presigned_url
from natsobj.s3.sigv4 import MAX_PRESIGN_EXPIRES
from natsobj.settings import check_gateway_url

S3_SCHEME = "s3://"


def object_of(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://BUCKET/KEY`` or ``nats://BUCKET/KEY``: one object."""
    if url.startswith(S3_SCHEME):
        bucket, _, key = url.removeprefix(S3_SCHEME).partition("/")
    else:
        location = nats_location(url)
        if location is None:
            raise UsageProblem(f"{url}: give the object as s3://BUCKET/KEY or nats://BUCKET/KEY")
        bucket, key = location
    if not bucket or not key or key.endswith("/"):
        raise UsageProblem(f"{url}: name one object, as in s3://BUCKET/KEY")
    return bucket, key


@click.command("presign")
@click.argument("url", metavar="s3://BUCKET/KEY|nats://BUCKET/KEY")
@click.option(
    "--expires-in",
    type=click.IntRange(1, MAX_PRESIGN_EXPIRES),
    default=3600,
    show_default=True,
    metavar="SECONDS",
    help=f"Seconds until the URL expires (at most {MAX_PRESIGN_EXPIRES}, 7 days).",
)
@click.option(
    "--endpoint-url",
    "endpoint",
    metavar="URL",
    help="The gateway, http://HOST:PORT (default: $NATSOBJ_GATEWAY_URL).",
)
@click.option(
    "--access-key",
    metavar="KEY",
    help="Access key to sign with (default: $NATSOBJ_GATEWAY_ACCESS_KEY, else the only key of "
    "the credentials file).",
)
@click.option(
    "--credentials",
    "credentials_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Gateway credentials file to take the key's secret from (default: "
    "$NATSOBJ_GATEWAY_SECRET, else the embedded server's gateway.toml).",
)
@click.option(
    "--method",
    type=click.Choice(["GET", "PUT"], case_sensitive=False),
    default="GET",
    show_default=True,
    help="What the URL lets its holder do: read the object, or write it.",
)
@pass_session
def presign(
    session: Session,
    url: str,
    expires_in: int,
    endpoint: str | None,
    access_key: str | None,
    credentials_file: Path | None,
    method: str,
) -> None:
    """Print a presigned URL of one object at the S3 gateway (natsobj gateway)."""
    bucket, key = object_of(url)
    if endpoint is not None:
        try:
            check_gateway_url(endpoint)
        except ValueError as exc:
            raise UsageProblem(f"--endpoint-url: {exc}") from None
    access = gateway_access(
        session.settings,
        endpoint=endpoint,
        access_key=access_key,
        credentials_file=credentials_file,
    )
    click.echo(presigned_url(access, bucket, key, expires_in=expires_in, method=method))


COMMANDS = (presign,)
