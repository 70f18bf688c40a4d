"""The connection as a Dagster resource: config fields in, ``natsobj.ConnectionSettings`` out.

Dagster runs sensors and IO managers outside any event loop it would keep alive for us, so
the resource hands out the blocking client; the async core runs behind it, on the process's
one shared connection (``natsobj.shared``), with each bucket bound once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import ConfigurableResource, EnvVar
from pydantic import Field

import natsobj
from natsobj import ConnectionSettings
from natsobj.errors import BucketNotFound
from natsobj.shared import SharedClient, shared_client

SECRET_HINT = "Secret: pass dagster.EnvVar(...) so the value never shows in Dagster's config."
CREATE_HINT = "Create it with `natsobj store create {bucket}`, or check the bucket name."


class NatsObjectStoreResource(ConfigurableResource):
    """Connection to the NATS server holding the object stores.

    ``url`` takes anything ``natsobj.ConnectionSettings.from_url`` does (several servers,
    ``?domain=...``, ``embedded``); the other fields override what the URL says.
    """

    url: str = Field(
        default="embedded",
        description="NATS URL(s), comma-separated, or 'embedded' for the local embedded server.",
    )
    user: str | None = Field(default=None, description="User name.")
    password: str | None = Field(default=None, repr=False, description=f"Password. {SECRET_HINT}")
    token: str | None = Field(default=None, repr=False, description=f"Auth token. {SECRET_HINT}")
    nkey_seed: str | None = Field(
        default=None, repr=False, description=f"NKey seed or path to a seed file. {SECRET_HINT}"
    )
    creds_file: str | None = Field(default=None, description="Path to a .creds file (JWT).")
    tls_ca: str | None = Field(default=None, description="CA bundle for TLS.")
    tls_cert: str | None = Field(default=None, description="Client certificate for mutual TLS.")
    tls_key: str | None = Field(default=None, description="Client key for mutual TLS.")
    domain: str | None = Field(default=None, description="JetStream domain (leaf nodes).")
    api_prefix: str | None = Field(
        default=None, description="JetStream API prefix for cross-account access."
    )
    inbox_prefix: str | None = Field(default=None, description="Custom inbox prefix.")
    name: str | None = Field(default="dagster", description="Client connection name.")
    connect_timeout: float = Field(default=5.0, description="Seconds to wait for a connection.")

    def settings(self) -> ConnectionSettings:
        """Everything natsobj needs; the single place the fields are interpreted.

        Works on a resource Dagster has not resolved yet too (a script calling it directly):
        EnvVar fields are read from the environment then.
        """
        fields = {
            name: resolve_value(getattr(self, name))
            for name in (
                "user",
                "password",
                "token",
                "nkey_seed",
                "creds_file",
                "tls_ca",
                "tls_cert",
                "tls_key",
                "domain",
                "api_prefix",
                "inbox_prefix",
                "name",
                "connect_timeout",
            )
        }
        return ConnectionSettings.coerce(resolve_value(self.url), **fields)

    @contextmanager
    def get_client(self) -> Iterator[natsobj.Client]:
        """The blocking client on the process's shared connection for these settings: every
        resource, IO manager and ``nats://`` path in the process uses the same one, and it
        stays open after the block (it is drained at process exit)."""
        yield shared_client(self.settings())

    @contextmanager
    def get_store(self, bucket: str, *, create: bool = False) -> Iterator[natsobj.ObjectStore]:
        """The bucket's blocking ObjectStore; with ``create`` a missing bucket is made."""
        with self.get_client() as client:
            yield open_store(client, bucket, create=create, missing_hint=CREATE_HINT)


def resolve_value(value: Any) -> Any:
    """A config field's value, read from the environment when it is an unresolved EnvVar."""
    return value.get_value() if isinstance(value, EnvVar) else value


def open_store(
    client: natsobj.Client, bucket: str, *, create: bool, missing_hint: str
) -> natsobj.ObjectStore:
    """Bind to ``bucket``, creating it if asked; ``missing_hint`` ({bucket} filled in) says
    what to do when it is missing and may not be created."""
    bind = client.cached_store if isinstance(client, SharedClient) else client.store
    try:
        return bind(bucket)
    except BucketNotFound:
        if create:
            client.ensure_store(bucket, description="Dagster artifacts (natsobj)")
            return bind(bucket)
        raise BucketNotFound(
            "bucket does not exist", bucket=bucket, hint=missing_hint.format(bucket=bucket)
        ) from None
