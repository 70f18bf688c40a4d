"""The gateway's access keys: a TOML file with one table per key, each naming the NATS identity
that key acts as.

    [keys.AKIAEXAMPLE]
    secret = "wJalrXUtnFEMI..."
    user = "etl"            # or password / token / nkey_seed / creds_file
    password = "..."

A key without identity fields acts as the gateway's own connection. An ``[anonymous]`` table
(identity fields only, no secret) names the identity unsigned requests act as; without it every
unsigned request is refused. Even with it, an unsigned request may only read a bucket that is
published (``natsobj.gateway.acl``). An optional ``[gateway]`` table's ``seal_secret`` keys the
seals of the ETags and checksums the gateway keeps in records (``Credentials.seal_key``). The
file holds secrets, so
it is read as natsobj reads its other local secrets (``natsobj.local.files.read_private``): a
regular file of the current user that no one else can read or write, never through a symlink;
or, when it lies in a secret an orchestrator mounted (a Kubernetes Secret volume, a Docker
secret), by the rules of ``natsobj.local.mounted_secrets``.

A gateway can also take its one key from the environment (``from_environment``:
``NATSOBJ_GATEWAY_ACCESS_KEY`` and ``NATSOBJ_GATEWAY_SECRET``); that key acts as the gateway's
own NATS connection, whose credentials come from the usual ``NATS_*`` variables.

Outside the gateway package (which needs the gateway extra): ``natsobj presign`` and the
filesystem's ``sign`` read the same file for the secret they sign with. The embedded server's
data directory keeps one such file, ``gateway.toml``, generated on first use
(``natsobj.local.embedded.gateway_keys_file``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from natsobj.errors import NatsObjError, UnsafeLocalState
from natsobj.local.files import read_private
from natsobj.local.mounted_secrets import read_mounted
from natsobj.settings import ConnectionSettings

IDENTITY_FIELDS = ("user", "password", "token", "nkey_seed", "creds_file")
"""The connection-settings fields that say who a connection is (``ConnectionSettings``)."""
_WHAT = "a gateway credentials file"
ACCESS_KEY_PREFIX = "NATSOBJ"  # 20 characters in all, as AWS access key ids are


class BadCredentialsFile(NatsObjError, ValueError):
    """The credentials file is missing, malformed, or names a field the gateway does not know:
    refused at start, so no key silently acts as an identity it was not meant to."""


@dataclass(frozen=True)
class AccessKey:
    """One access key: its secret and the identity fields it connects with (empty: the
    gateway's own connection)."""

    access_key: str
    secret: str = field(repr=False)
    identity: Mapping[str, str] = field(default_factory=dict, repr=False)

    def settings(self, base: ConnectionSettings) -> ConnectionSettings:
        """The gateway's settings with this key's identity instead of the gateway's own (every
        identity field replaced, so a key never inherits a credential it was not given)."""
        if not self.identity:
            return base
        cleared: dict[str, Any] = dict.fromkeys(IDENTITY_FIELDS)
        cleared.update(self.identity)
        return ConnectionSettings.coerce(base, **cleared)


ANONYMOUS = "anonymous"
"""The top-level table naming the identity unsigned requests act as."""


GATEWAY = "gateway"
"""The top-level table of the gateway's own secrets (``seal_secret``)."""


@dataclass(frozen=True)
class Credentials:
    """The access keys by id, the identity of unsigned requests (None: they are refused), and
    the secret the gateway seals the values it keeps in records with (None: derived from the
    keys' secrets)."""

    keys: Mapping[str, AccessKey]
    anonymous: AccessKey | None = None
    seal_secret: str | None = field(default=None, repr=False)

    @property
    def seal_key(self) -> bytes:
        """The HMAC key of ``natsobj.gateway.etags``: a secret no bucket holds, so no NATS
        writer can seal an ETag or checksum for bytes the gateway never saw. Every gateway
        reading the same file derives the same key. Without ``seal_secret`` it comes from
        the access keys' secrets, so adding, removing or rotating a key changes it: values
        kept before then are no longer believed and objects answer the ETag derived from
        their digest (set ``seal_secret`` to keep ETags across key changes)."""
        material = hashlib.sha256(b"natsobj gateway seal\0")
        if self.seal_secret is not None:
            material.update(self.seal_secret.encode())
        else:
            for access_key in sorted(self.keys):
                material.update(f"{access_key}\0{self.keys[access_key].secret}\0".encode())
        return material.digest()


def load(path: str | Path) -> Credentials:
    """The access keys (and anonymous identity) of the credentials file at ``path``."""
    path = Path(path)
    fix = (
        f"Make {path} a regular file only you can read: chmod 600 {path}; or mount it as an"
        " orchestrator's secret (a Kubernetes Secret volume, a Docker secret)."
    )
    try:
        raw = read_private(path, secret=True, fix=fix, what=_WHAT)
    except UnsafeLocalState:
        raw = read_mounted(path)
        if raw is None:
            raise  # not in a mounted secret: the local rule's refusal stands
    if raw is None:
        raise BadCredentialsFile(f"gateway credentials file {path} does not exist")
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadCredentialsFile(
            f"gateway credentials file {path} is not valid TOML: {exc}"
        ) from None
    return parse(document, str(path))


# the names ``natsobj gateway --print-env`` exports for S3 clients and ``natsobj presign``: one
# pair of names for the key, on the serving side and the signing side
ACCESS_KEY_ENV = "NATSOBJ_GATEWAY_ACCESS_KEY"
SECRET_ENV = "NATSOBJ_GATEWAY_SECRET"


def from_environment(environ: Mapping[str, str] = os.environ) -> Credentials | None:
    """The one key ``ACCESS_KEY_ENV`` and ``SECRET_ENV`` name; None when neither is set. Its
    seal key derives from its secret, so ETags kept stay believed while the key does."""
    access_key, secret = environ.get(ACCESS_KEY_ENV), environ.get(SECRET_ENV)
    if not access_key and not secret:
        return None
    if not access_key or not secret:
        raise BadCredentialsFile(
            f"{ACCESS_KEY_ENV} and {SECRET_ENV} go together: set both or neither"
        )
    return parse({"keys": {access_key: {"secret": secret}}}, "the environment")


def parse(document: Mapping[str, Any], source: str) -> Credentials:
    """The keys of an already-decoded credentials document (``source`` names it in errors)."""
    unknown = set(document) - {"keys", ANONYMOUS, GATEWAY}
    if unknown:
        raise BadCredentialsFile(
            f"{source}: unknown top-level entries {sorted(unknown)};"
            f" only [keys.<ID>], [{ANONYMOUS}] and [{GATEWAY}]"
        )
    tables = document.get("keys")
    if not isinstance(tables, dict) or not tables:
        raise BadCredentialsFile(f"{source}: no [keys.<ACCESS_KEY_ID>] table")
    keys = {}
    for access_key, table in tables.items():
        where = f"{source}: [keys.{access_key}]"
        if not isinstance(table, dict):
            raise BadCredentialsFile(f"{where} is not a table")
        secret = table.get("secret")
        if not isinstance(secret, str) or not secret:
            raise BadCredentialsFile(f"{where} has no secret")
        identity = _identity({k: v for k, v in table.items() if k != "secret"}, where)
        keys[access_key] = AccessKey(access_key, secret, identity)
    return Credentials(
        keys,
        _anonymous(document.get(ANONYMOUS), source),
        _seal_secret(document.get(GATEWAY), source),
    )


def _seal_secret(table: object, source: str) -> str | None:
    """The ``[gateway]`` table's ``seal_secret`` (its only field), None without the table."""
    if table is None:
        return None
    where = f"{source}: [{GATEWAY}]"
    if not isinstance(table, dict) or set(table) - {"seal_secret"}:
        raise BadCredentialsFile(f"{where} may hold only seal_secret")
    secret = table.get("seal_secret")
    if not isinstance(secret, str) or len(secret) < 16:
        raise BadCredentialsFile(f"{where}: seal_secret must be a string of at least 16 characters")
    return secret


def _anonymous(table: object, source: str) -> AccessKey | None:
    """The ``[anonymous]`` table's identity: identity fields only (an unsigned request has no
    secret to check, so a ``secret`` here is a mistake worth refusing)."""
    if table is None:
        return None
    where = f"{source}: [{ANONYMOUS}]"
    if not isinstance(table, dict):
        raise BadCredentialsFile(f"{where} is not a table")
    return AccessKey("", "", _identity(table, where))


def _identity(fields: Mapping[str, Any], where: str) -> dict[str, str]:
    """``fields`` checked as identity fields: known names, string values."""
    for name, value in fields.items():
        if name not in IDENTITY_FIELDS:
            raise BadCredentialsFile(
                f"{where}: unknown field {name!r}; identity fields are {', '.join(IDENTITY_FIELDS)}"
            )
        if not isinstance(value, str):
            raise BadCredentialsFile(f"{where}: {name} must be a string")
    return dict(fields)


def new_key() -> AccessKey:
    """A fresh key acting as the gateway's own connection: an id of 20 upper-case letters and
    digits and a 40-character secret, the shapes S3 clients expect."""
    tail = base64.b32encode(secrets.token_bytes(10)).decode()[: 20 - len(ACCESS_KEY_PREFIX)]
    return AccessKey(ACCESS_KEY_PREFIX + tail, secrets.token_urlsafe(30))


def render(key: AccessKey) -> str:
    """The credentials document of one key without identity fields (what ``new_key`` makes:
    its id and secret need no TOML quoting)."""
    return f'[keys.{key.access_key}]\nsecret = "{key.secret}"\n'


def choose(keys: Mapping[str, AccessKey], access_key: str | None, source: str) -> AccessKey:
    """The key ``access_key`` names, or the file's only key when none is named."""
    if access_key is None:
        if len(keys) != 1:
            raise BadCredentialsFile(
                f"{source} has {len(keys)} keys ({', '.join(sorted(keys))}); name one"
            )
        return next(iter(keys.values()))
    if access_key not in keys:
        raise BadCredentialsFile(f"{source} has no key {access_key!r}")
    return keys[access_key]
