"""The connection as a Dagster resource: config fields in, ``natsobj.ConnectionSettings`` out.

Dagster runs sensors and IO managers outside any event loop it would keep alive for us, so
the resource hands out the blocking client; the async core runs behind it, on the process's
one shared connection (``natsobj.shared``), with each bucket bound once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dagster import ConfigurableResource, EnvVar
from pydantic import Field, field_validator, model_validator

import natsobj
from natsobj import ConnectionSettings
from natsobj.errors import BucketNotFound
from natsobj.settings import SETTINGS, URL_FIELD, check_options
from natsobj.shared import SharedClient, shared_client
from natsobj.store_config import SETTING_FIELDS, StoreConfig

SECRET_HINT = "Secret: pass dagster.EnvVar(...) so the value never shows in Dagster's config."
CREATE_HINT = "Create it with `natsobj store create {bucket}`, or check the bucket name."
URL_CONFIG = "url"  # the config field that gives the servers (``ConnectionSettings.servers``)
BUCKET_SETTINGS_CONFIG = "bucket_settings"  # what a bucket this resource creates is made with
BUCKET_DESCRIPTION = "Dagster artifacts (natsobj)"
BUCKET_SETTINGS_HELP = (
    "Settings of a bucket created through this resource (an IO manager's or get_store's with"
    " create=True); an existing bucket is left as it is. Keys are the store settings, values"
    " text (durations like 7d, true/false, numbers; metadata and placement as JSON objects): "
    + "; ".join(
        f"{name}: {row.metadata['help'].rstrip('.')}" for name, row in SETTING_FIELDS.items()
    )
)


def _from_table(name: str, default: Any = None) -> Any:
    """A config field whose description (and redaction, for a secret) is its row of
    ``natsobj.settings.SETTINGS``: the help text is written once, for every face."""
    row = SETTINGS[URL_FIELD if name == URL_CONFIG else name]
    if row.secret:
        return Field(default=default, repr=False, description=f"{row.help} {SECRET_HINT}")
    return Field(default=default, description=row.help)


class NatsObjectStoreResource(ConfigurableResource):
    """Connection to the NATS server holding the object stores.

    ``url`` takes anything ``natsobj.ConnectionSettings.from_url`` does (several servers,
    ``?domain=...``, ``embedded``); without it, ``NATS_URL``, else the embedded server
    already running for this directory (one is started only for ``embedded``). The other
    fields override what the URL says; a field it does not have is refused. There is one
    field per ``ConnectionSettings`` field (Dagster reads fields from the class body, so they
    are written out; tests/house/test_one_table.py checks them against the table), and
    ``bucket_settings``, the store settings (``natsobj.store_config``) of buckets it creates.
    """

    url: str | None = _from_table(URL_CONFIG)
    user: str | None = _from_table("user")
    password: str | None = _from_table("password")
    token: str | None = _from_table("token")
    nkey_seed: str | None = _from_table("nkey_seed")
    creds_file: str | None = _from_table("creds_file")
    tls_ca: str | None = _from_table("tls_ca")
    tls_cert: str | None = _from_table("tls_cert")
    tls_key: str | None = _from_table("tls_key")
    domain: str | None = _from_table("domain")
    api_prefix: str | None = _from_table("api_prefix")
    inbox_prefix: str | None = _from_table("inbox_prefix")
    name: str | None = _from_table("name", "dagster")
    connect_timeout: float | None = _from_table("connect_timeout")
    api_timeout: float | None = _from_table("api_timeout")
    failover_timeout: float | None = _from_table("failover_timeout")
    consistency: str | None = _from_table("consistency")
    cache_dir: str | None = _from_table("cache_dir")
    name_index: bool | None = _from_table("name_index")
    gateway_url: str | None = _from_table("gateway_url")
    gateway_access_key: str | None = _from_table("gateway_access_key")
    gateway_secret: str | None = _from_table("gateway_secret")
    bucket_settings: dict[str, str] | None = Field(default=None, description=BUCKET_SETTINGS_HELP)

    @model_validator(mode="before")
    @classmethod
    def refuse_unknown_fields(cls, values: Any) -> Any:
        """A misspelt field (``server=``) is refused, naming the fields, not ignored."""
        if isinstance(values, Mapping):
            check_options(values, cls.model_fields, "field of NatsObjectStoreResource")
        return values

    @field_validator(BUCKET_SETTINGS_CONFIG)
    @classmethod
    def check_bucket_settings(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        """A misspelt setting or a bad value fails when the resource is configured, not at the
        first output that creates a bucket (the check needs a bucket name; any will do)."""
        if value:
            StoreConfig.from_options("check", value)
        return value

    def settings(self) -> ConnectionSettings:
        """Everything natsobj needs; the single place the fields are interpreted.

        Works on a resource Dagster has not resolved yet too (a script calling it directly):
        EnvVar fields are read from the environment then.
        """
        fields = {
            name: resolve_value(getattr(self, name)) for name in SETTINGS if name != URL_FIELD
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
            yield open_store(
                client,
                bucket,
                create=create,
                missing_hint=CREATE_HINT,
                settings=self.bucket_settings,
            )


def resolve_value(value: Any) -> Any:
    """A config field's value, read from the environment when it is an unresolved EnvVar."""
    return value.get_value() if isinstance(value, EnvVar) else value


def open_store(
    client: natsobj.Client,
    bucket: str,
    *,
    create: bool,
    missing_hint: str,
    settings: Mapping[str, str] | None = None,
) -> natsobj.ObjectStore:
    """Bind to ``bucket``, creating it if asked with ``settings`` (a resource's
    ``bucket_settings``); ``missing_hint`` ({bucket} filled in) says what to do when it is
    missing and may not be created."""
    bind = client.cached_store if isinstance(client, SharedClient) else client.store
    try:
        return bind(bucket)
    except BucketNotFound:
        if create:
            base = StoreConfig(bucket, description=BUCKET_DESCRIPTION)
            client.ensure_store(StoreConfig.from_options(base, settings or {}))
            return bind(bucket)
        raise BucketNotFound(
            "bucket does not exist", bucket=bucket, hint=missing_hint.format(bucket=bucket)
        ) from None
