"""Presigned URLs for the S3 gateway, made by natsobj's own faces: ``natsobj presign`` and the
``nats://`` filesystem's ``sign``.

NATS has no HTTP URLs of its own; a presigned URL is the gateway's (``natsobj gateway``): anyone
holding it may read (or, for a PUT, write) that one object until it expires, with a plain HTTP
client and no credentials. Where the endpoint, access key and secret come from: the arguments,
then the settings (``gateway_url``, ``gateway_access_key``, ``gateway_secret``: the
``NATSOBJ_GATEWAY_*`` variables), then a gateway credentials file for the secret: the one given,
else the embedded server's (``gateway.toml`` in its data directory). The signature is
``natsobj.s3.sigv4``'s, the rule the gateway checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from natsobj.errors import GatewayNotConfigured
from natsobj.local.embedded import GATEWAY_KEYS_FILE
from natsobj.s3 import access_keys
from natsobj.s3.sigv4 import DEFAULT_REGION, presign
from natsobj.settings import ConnectionSettings


@dataclass(frozen=True)
class GatewayAccess:
    """Where the gateway is and the key to sign with."""

    endpoint: str
    access_key: str
    secret: str = field(repr=False)


def gateway_access(
    settings: ConnectionSettings,
    *,
    endpoint: str | None = None,
    access_key: str | None = None,
    credentials_file: str | Path | None = None,
) -> GatewayAccess:
    """The endpoint and key presigned URLs are made with (see the module's docstring);
    ``GatewayNotConfigured`` when something is missing."""
    endpoint = endpoint or settings.gateway_url
    if not endpoint:
        raise GatewayNotConfigured("no S3 gateway endpoint is configured to presign a URL for")
    access_key = access_key or settings.gateway_access_key
    if credentials_file is None and settings.gateway_secret:
        if access_key is None:
            raise GatewayNotConfigured("a gateway secret is configured but no access key")
        return GatewayAccess(endpoint, access_key, settings.gateway_secret)
    path = Path(credentials_file) if credentials_file is not None else embedded_keys(settings)
    if path is None:
        raise GatewayNotConfigured(
            "no secret is configured for the S3 gateway, and no embedded server's key file "
            "holds one"
        )
    key = access_keys.choose(access_keys.load(path).keys, access_key, str(path))
    return GatewayAccess(endpoint, key.access_key, key.secret)


def embedded_keys(settings: ConnectionSettings) -> Path | None:
    """The embedded server's gateway key file when the settings point at the embedded server
    and it has one."""
    data_dir = settings.embedded_dir
    if data_dir is None or not (data_dir / GATEWAY_KEYS_FILE).exists():
        return None
    return data_dir / GATEWAY_KEYS_FILE


def presigned_url(
    access: GatewayAccess,
    bucket: str,
    key: str,
    *,
    expires_in: int = 3600,
    method: str = "GET",
    region: str = DEFAULT_REGION,
    now: datetime | None = None,
) -> str:
    """The presigned URL of ``bucket/key`` at the gateway, valid ``expires_in`` seconds."""
    return presign(
        access.endpoint,
        bucket,
        key,
        access_key=access.access_key,
        secret=access.secret,
        expires_in=expires_in,
        method=method,
        region=region,
        now=now,
    )
