"""Turn an Airflow connection into ``natsobj.ConnectionSettings``.

Only field mapping happens here: URLs are parsed by ``ConnectionSettings.from_url``, so a NATS
URL means the same thing in a connection, the CLI and a Spark option.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Protocol

from natsobj.parsing import parse_bool
from natsobj.settings import EMBEDDED, SETTINGS, ConnectionSettings, Setting

DEFAULT_PORT = 4222
_PREFIX = "extra__nats__"
# The connection's own Login and Password fields carry these; Host (or "servers") the servers.
FROM_CONNECTION_FIELDS = ("servers", "user", "password")
# Airflow hides an extra's value in its UI and logs only when the extra's name says it is
# secret (contains "token", "secret", "password", ...).
_HIDDEN_BY_NAME = ("token", "secret", "password")


def extra_name(field: str, row: Setting) -> str:
    """The extra that sets ``field``: its own name, with "_secret" after a secret's name that
    Airflow would not hide (so the NKey seed's extra is ``nkey_seed_secret``)."""
    if row.secret and not any(word in field for word in _HIDDEN_BY_NAME):
        return f"{field}_secret"
    return field


# Connection extras and the ConnectionSettings field each one sets, from the one table.
SETTINGS_EXTRAS = {
    extra_name(field, row): field
    for field, row in SETTINGS.items()
    if field not in FROM_CONNECTION_FIELDS
}
# Names that would show a secret in Airflow's UI and logs; refused with the name to use.
RENAMED_EXTRAS = {field: extra for extra, field in SETTINGS_EXTRAS.items() if extra != field}
# Extras that choose the server rather than set a field.
SERVER_EXTRAS = ("servers", "embedded", "embedded_dir")
KNOWN_EXTRAS = frozenset((*SETTINGS_EXTRAS, *SERVER_EXTRAS))


class ConnectionLike(Protocol):
    conn_id: str
    host: str | None
    port: int | None
    login: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


class NatsConnectionError(ValueError):
    """A connection that cannot describe a NATS server; the message says which field to fix."""


def _extras(conn: ConnectionLike, raw: dict[str, Any]) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for key, value in raw.items():
        key = key.removeprefix(_PREFIX)
        if value in (None, ""):
            continue
        if key in RENAMED_EXTRAS:
            raise NatsConnectionError(
                f"connection {conn.conn_id!r}: put the NKey seed in the extra "
                f"{RENAMED_EXTRAS[key]!r}, not {key!r} (Airflow masks extras by name and "
                f"would show {key!r} in plain text)"
            )
        if key not in KNOWN_EXTRAS:
            raise NatsConnectionError(
                f"connection {conn.conn_id!r}: unknown extra {key!r}; "
                f"known extras are {', '.join(sorted(KNOWN_EXTRAS))}"
            )
        extras[key] = value
    return extras


def _embedded_dir(conn: ConnectionLike, value: Any) -> str:
    """The ``embedded_dir`` extra, which must be absolute: the scheduler, the triggerer and
    each worker run in directories of their own, so a relative one would name another
    server (and other data) in each of them."""
    directory = str(value).strip()
    if not PurePath(directory).is_absolute():
        raise NatsConnectionError(
            f"connection {conn.conn_id!r}: the 'embedded_dir' extra must be an absolute "
            f"directory, not {directory!r}: the scheduler, triggerer and workers run in "
            "directories of their own, and a relative one would be another server in each "
            "(give e.g. /srv/natsobj, or the 'embedded' extra for $NATSOBJ_DATA_DIR)"
        )
    return directory


def _base(conn: ConnectionLike, extras: dict[str, Any]) -> ConnectionSettings:
    if extras.get("embedded_dir"):
        directory = _embedded_dir(conn, extras["embedded_dir"])
        return ConnectionSettings(servers=[f"{EMBEDDED}://{directory}"])
    if parse_bool(extras.get("embedded", False), what="the 'embedded' extra"):
        return ConnectionSettings(servers=[EMBEDDED])
    servers = extras.get("servers")
    if servers:
        return ConnectionSettings.from_url(
            ",".join(servers) if isinstance(servers, list) else str(servers)
        )
    host = (conn.host or "").strip()
    if not host:
        raise NatsConnectionError(
            f"connection {conn.conn_id!r} names no NATS server: set Host (and Port), the "
            "'servers' extra, or the 'embedded' extra"
        )
    if "://" in host or host == EMBEDDED or "," in host:
        return ConnectionSettings.from_url(host)
    return ConnectionSettings.from_url(f"nats://{host}:{conn.port or DEFAULT_PORT}")


def settings_from_connection(
    conn: ConnectionLike, extra: dict[str, Any] | None = None
) -> ConnectionSettings:
    """Map host/port/login/password and the extras onto ConnectionSettings fields.

    ``extra`` is the already decoded extra (async callers get it with ``aextra_dejson()``:
    the property masks secrets through a blocking call to the supervisor)."""
    extras = _extras(conn, conn.extra_dejson if extra is None else extra)
    overrides = {field: extras[key] for key, field in SETTINGS_EXTRAS.items() if key in extras}
    if conn.login:
        overrides["user"] = conn.login
        overrides["password"] = conn.password or ""
    elif conn.password:
        overrides["token"] = conn.password
    overrides.setdefault("name", f"airflow:{conn.conn_id}")
    try:
        return ConnectionSettings.coerce(_base(conn, extras), **overrides)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, NatsConnectionError):
            raise
        raise NatsConnectionError(f"connection {conn.conn_id!r}: {exc}") from exc
