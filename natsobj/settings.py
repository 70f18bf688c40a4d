"""One connection type for every front end: Airflow connections, Dagster resources, the CLI
and Spark options all become a ``ConnectionSettings`` and nothing else parses NATS options."""

from __future__ import annotations

import difflib
import os
import ssl
from collections.abc import Collection, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from natsobj.errors import UnknownOption
from natsobj.parsing import parse_bool
from natsobj.wire import DEFAULT_API_PREFIX, domain_api_prefix

EMBEDDED = "embedded"
# The server when nothing names one (no URL, no NATS_URL): the embedded server already running
# for this directory, if there is one; a new one is started only for ``embedded``. Like
# ``embedded`` it may name its data directory (``embedded-if-running:///dir``): Spark pins it so.
RUNNING_EMBEDDED = "embedded-if-running"
DATA_DIR_ENV = "NATSOBJ_DATA_DIR"
DEFAULT_DATA_DIR = ".natsobj"
# Read consistency on replicated stores (see docs/production.md, "Consistency").
STRONG = "strong"  # every read sees every write that has returned, from any node
EVENTUAL = "eventual"  # reads may be served by a replica that is a few writes behind
CONSISTENCY_LEVELS = (STRONG, EVENTUAL)
URL_SCHEMES = ("nats", "tls", "ws", "wss")
_REDACTED = "***"


@dataclass(frozen=True)
class Setting:
    """A ``ConnectionSettings`` field's row of the one table every face is generated from:
    the environment variable, URL query and Spark option names, whether it is a secret, its
    help text, and what kind of value it takes. How a face spells it beyond these (the CLI's
    flags: ``natsobj.cli.connection_flags``) is that face's."""

    label: str
    help: str
    env: str | None = None  # read by from_env(); documented beside each face's name for it
    secret: bool = False  # redacted in repr, password inputs, EnvVar in Dagster
    aliases: tuple[str, ...] = ()  # more names for it in URL queries and Spark options
    kind: type = str  # str, float or bool: how forms and configs type it
    choices: tuple[str, ...] = ()


def _row(label: str, help_text: str, **row: Any) -> dict[str, Setting]:
    return {"setting": Setting(label, help_text, **row)}


@dataclass
class ConnectionSettings:
    """Where the server is and how to authenticate; secrets are redacted in ``repr``.

    Each field's metadata (``setting(name)``) is the one description every face reads:
    ENV_VARS, OPTION_FIELDS and SECRET_FIELDS below, the CLI's connection options, the
    Airflow connection's extras and form, and the Dagster resource's fields."""

    servers: list[str] = field(
        default_factory=lambda: [RUNNING_EMBEDDED],
        metadata=_row(
            "Servers",
            "NATS URL(s), comma-separated (nats://user:pass@h1:4222,h2:4222?domain=hub), or "
            "'embedded' for the local embedded server (started if it is not running).",
            env="NATS_URL",
        ),
    )
    user: str | None = field(default=None, metadata=_row("User", "User name.", env="NATS_USER"))
    password: str | None = field(
        default=None, metadata=_row("Password", "Password.", env="NATS_PASSWORD", secret=True)
    )
    token: str | None = field(
        default=None, metadata=_row("Token", "Auth token.", env="NATS_TOKEN", secret=True)
    )
    nkey_seed: str | None = field(
        default=None,
        metadata=_row(
            "NKey seed",
            "NKey seed, or the path of a seed file.",
            env="NATS_NKEY_SEED",
            secret=True,
        ),
    )
    creds_file: str | None = field(
        default=None,
        metadata=_row(
            "Credentials file",
            "Path to a .creds file (JWT + NKey).",
            env="NATS_CREDS",
            aliases=("creds",),
        ),
    )
    tls_ca: str | None = field(
        default=None,
        metadata=_row("TLS CA file", "CA bundle that verifies the server.", env="NATS_CA"),
    )
    tls_cert: str | None = field(
        default=None,
        metadata=_row(
            "TLS client certificate", "Client certificate for mutual TLS.", env="NATS_CERT"
        ),
    )
    tls_key: str | None = field(
        default=None,
        metadata=_row("TLS client key", "Private key of the client certificate.", env="NATS_KEY"),
    )
    domain: str | None = field(
        default=None,
        metadata=_row(
            "JetStream domain", "Reach JetStream in another domain (leaf nodes).", env="NATS_DOMAIN"
        ),
    )
    api_prefix: str | None = field(
        default=None,
        metadata=_row(
            "JetStream API prefix",
            "Reach another account's JetStream through its imports.",
            env="NATS_API_PREFIX",
            aliases=("js_api_prefix",),
        ),
    )
    inbox_prefix: str | None = field(
        default=None,
        metadata=_row("Inbox prefix", "Custom inbox prefix for replies.", env="NATS_INBOX_PREFIX"),
    )
    name: str | None = field(
        default=None,
        metadata=_row("Connection name", "Client name the server shows.", env="NATS_NAME"),
    )
    connect_timeout: float = field(
        default=5.0,
        metadata=_row(
            "Connect timeout (s)",
            "Seconds to wait for the server.",
            env="NATS_CONNECT_TIMEOUT",
            aliases=("timeout",),
            kind=float,
        ),
    )
    api_timeout: float = field(
        default=5.0,
        metadata=_row(
            "API timeout (s)",
            "Seconds a JetStream request waits for its answer; also how long a call waits"
            " for a lost connection to come back (a single server).",
            env="NATSOBJ_API_TIMEOUT",
            kind=float,
        ),
    )
    failover_timeout: float = field(
        default=30.0,
        metadata=_row(
            "Failover timeout (s)",
            "In a cluster, seconds an operation waits for a new stream leader (or for any node"
            " to be reachable) before raising ClusterUnavailable.",
            env="NATSOBJ_FAILOVER_TIMEOUT",
            kind=float,
        ),
    )
    # Read consistency on replicated stores (see docs/production.md, "Consistency").
    consistency: str = field(
        default=STRONG,
        metadata=_row(
            "Read consistency",
            "strong: every read sees every write that has returned; eventual: a replica a "
            "few writes behind may answer.",
            env="NATSOBJ_CONSISTENCY",
            choices=CONSISTENCY_LEVELS,
        ),
    )
    # The local name index that makes prefix listings cost their matches (natsobj.local.name_index):
    # where it is kept (None: NATSOBJ_CACHE_DIR, else ~/.cache/natsobj) and whether to use it
    # (None: NATSOBJ_NAME_INDEX, on unless "off").
    cache_dir: str | None = field(
        default=None,
        metadata=_row(
            "Cache directory",
            "Where the local name index is kept (default ~/.cache/natsobj).",
            env="NATSOBJ_CACHE_DIR",
        ),
    )
    name_index: bool | str | None = field(
        default=None,
        metadata=_row(
            "Name index",
            "Keep a local index of object names so prefix listings cost their matches "
            "(default on).",
            env="NATSOBJ_NAME_INDEX",
            kind=bool,
        ),
    )

    # The S3 gateway in front of this NATS server, for the presigned URLs natsobj makes
    # (``natsobj presign``, the filesystem's ``sign``): natsobj.s3.presign.
    gateway_url: str | None = field(
        default=None,
        metadata=_row(
            "S3 gateway URL",
            "Endpoint of the natsobj S3 gateway in front of this server (http://host:9000), "
            "for presigned URLs.",
            env="NATSOBJ_GATEWAY_URL",
        ),
    )
    gateway_access_key: str | None = field(
        default=None,
        metadata=_row(
            "S3 gateway access key",
            "Access key presigned URLs are signed with (default: the only key of the "
            "embedded server's gateway).",
            env="NATSOBJ_GATEWAY_ACCESS_KEY",
        ),
    )
    gateway_secret: str | None = field(
        default=None,
        metadata=_row(
            "S3 gateway secret",
            "Secret of the gateway access key (default: from the embedded server's "
            "gateway key file).",
            env="NATSOBJ_GATEWAY_SECRET",
            secret=True,
        ),
    )

    def __post_init__(self) -> None:
        if isinstance(self.servers, str):
            self.servers = [s.strip() for s in self.servers.split(",") if s.strip()]
        taken = [_take_userinfo(server) for server in self.servers]
        self.servers = [server for server, _ in taken]
        if not self.servers:
            raise ValueError("ConnectionSettings needs at least one server URL (or 'embedded')")
        self._adopt(_one_set_of_credentials(taken))
        if self.domain and self.api_prefix:
            raise ValueError("set either domain or api_prefix, not both")
        self.connect_timeout = float(self.connect_timeout)
        self.api_timeout = float(self.api_timeout)
        self.failover_timeout = float(self.failover_timeout)
        if self.name_index is not None:
            self.name_index = parse_bool(self.name_index, what="name_index")
        if self.gateway_url is not None:
            check_gateway_url(self.gateway_url)
        self.consistency = str(self.consistency).lower()
        if self.consistency not in CONSISTENCY_LEVELS:
            raise ValueError(
                f"consistency must be one of {list(CONSISTENCY_LEVELS)}, not {self.consistency!r}"
            )

    def _adopt(self, credentials: dict[str, str]) -> None:
        """Credentials found in server URLs fill the fields not given on their own: a server
        list handed over as it is can never print them."""
        if "user" in credentials and self.user is None:
            self.user, self.password = credentials["user"], credentials["password"]
        if "token" in credentials and self.token is None:
            self.token = credentials["token"]

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name in SECRET_FIELDS:
                value = _REDACTED
            shown.append(f"{f.name}={value!r}")
        return f"ConnectionSettings({', '.join(shown)})"

    __str__ = __repr__

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> ConnectionSettings:
        """Parse ``nats://user:pass@h1:4222,h2:4222?domain=hub`` or ``embedded[:///dir]``.

        The rule, so that no secret is ever cut or mistaken for a host: ``,`` separates the
        servers; in each, the userinfo ends at the last ``@``, so ``:``, ``/``, ``?`` and ``@``
        may appear raw in a password; the options start at the first ``?`` after it and run
        to the end. A ``,`` or ``%`` in credentials, and a ``@`` in an option value, must be
        percent-encoded."""
        url = url.strip()
        if _embedded_form(url):
            return cls(servers=[url], **_clean(overrides))
        scheme = url.partition("://")[0] if "://" in url.split(",")[0] else "nats"
        taken: list[tuple[str, dict[str, str]]] = []
        query = ""
        pieces = url.split(",")
        for index, piece in enumerate(pieces):
            piece = piece.strip()
            if not piece:
                continue
            # "nats://h1:4222,h2:4222" and the NATS_URL form "nats://h1:4222,nats://h2:4222"
            server, credentials = _take_userinfo(piece if "://" in piece else f"{scheme}://{piece}")
            server, mark, query = server.partition("?")
            server = _strip_path(server)
            _check_server(server)
            taken.append((server, credentials))
            if mark:
                query = ",".join([query, *pieces[index + 1 :]])  # a "," inside an option value
                break
        values: dict[str, Any] = {"servers": [server for server, _ in taken]}
        values.update(_one_set_of_credentials(taken))
        options = parse_qs(query, keep_blank_values=False)
        check_options(options, OPTION_FIELDS, "NATS URL option")
        for key, vals in options.items():
            values[OPTION_FIELDS[key]] = vals[-1]
        values.update(_clean(overrides))
        return cls(**values)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> ConnectionSettings:
        env = os.environ if environ is None else environ
        # NATS_* is shared with the nats CLI and other clients; NATSOBJ_* is ours alone
        ours = [name for name in env if name.startswith(ENV_PREFIX)]
        check_options(ours, KNOWN_ENV, "environment variable", near_misses_only=True)
        url = env.get("NATS_URL")
        settings = cls.from_url(url) if url else cls()
        values: dict[str, Any] = {
            target: env[var]
            for var, target in ENV_VARS.items()
            if var != "NATS_URL" and env.get(var)
        }
        values.update(_clean(overrides))
        return replace(settings, **values) if values else settings

    @classmethod
    def coerce(cls, value: str | ConnectionSettings | None, **overrides: Any) -> ConnectionSettings:
        """Accept what the front ends hand us: a URL, settings, or None for the environment."""
        if value is None:
            return cls.from_env(**overrides)
        if isinstance(value, ConnectionSettings):
            return replace(value, **_clean(overrides)) if overrides else value
        return cls.from_url(value, **overrides)

    # -- use ------------------------------------------------------------------------------------

    @property
    def embedded_dir(self) -> Path | None:
        """The data directory when this points at the embedded server, else None."""
        server = self.servers[0]
        form = _embedded_form(server)
        if form is None:
            return None
        if server == form:
            return Path(os.environ.get(DATA_DIR_ENV, DEFAULT_DATA_DIR)).resolve()
        path = server.split(":", 1)[1].lstrip("/")
        return Path("/" + path) if path else Path(DEFAULT_DATA_DIR).resolve()

    @property
    def starts_embedded(self) -> bool:
        """Whether these settings ask for the embedded server to be started when it is not
        running (``embedded``), not only for the one running (``embedded-if-running``)."""
        return _embedded_form(self.servers[0]) == EMBEDDED

    @property
    def js_api_prefix(self) -> str:
        if self.domain:
            return domain_api_prefix(self.domain)
        return self.api_prefix.rstrip(".") if self.api_prefix else DEFAULT_API_PREFIX

    @property
    def object_prefix(self) -> str:
        """What ``$O`` subjects are published under. ADR-19 puts an API prefix in front (the
        account import strips it); a domain's leafnode maps only ``$JS.<domain>.API.>``, so
        with a domain the publishes stay on ``$O`` and cross the leafnode as they are."""
        if self.api_prefix:
            return f"{self.js_api_prefix}.$O"
        return "$O"

    def redacted_url(self) -> str:
        """A URL safe to print: credentials replaced by ***."""
        server = ",".join(self.servers)
        if self.user:
            scheme, _, hosts = server.partition("://")
            server = f"{scheme}://{quote(self.user)}:{_REDACTED}@{hosts}"
        return server

    def redact(self, text: str) -> str:
        """``text`` with each secret of these settings, as given or percent-encoded, replaced
        by ***: for messages that wrap an error another layer may have worded with one."""
        for secret in (getattr(self, name) for name in SECRET_FIELDS):
            for form in {secret, quote(secret, safe="")} if secret else ():
                text = text.replace(form, _REDACTED)
        return text

    def ssl_context(self) -> ssl.SSLContext | None:
        tls_scheme = any(s.startswith("tls://") for s in self.servers)
        if not (self.tls_ca or self.tls_cert or tls_scheme):
            return None
        context = ssl.create_default_context(cafile=self.tls_ca)
        if self.tls_cert:
            context.load_cert_chain(self.tls_cert, self.tls_key)
        return context

    def nats_options(self) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect``; call on settings that name a real server
        (``natsobj.local.embedded_rule.resolve_server``)."""
        options: dict[str, Any] = {
            "servers": self.servers,
            "connect_timeout": self.connect_timeout,
            "name": self.name or "natsobj",
        }
        if self.user:
            options["user"] = self.user
            options["password"] = self.password or ""
        if self.token:
            options["token"] = self.token
        if self.nkey_seed:
            if Path(self.nkey_seed).is_file():
                options["nkeys_seed"] = self.nkey_seed
            else:
                options["nkeys_seed_str"] = self.nkey_seed
        if self.creds_file:
            options["user_credentials"] = self.creds_file
        if self.inbox_prefix:
            options["inbox_prefix"] = self.inbox_prefix
        context = self.ssl_context()
        if context is not None:
            options["tls"] = context
        return options


# The table, read from the fields: each face derives its names from these.
SETTINGS: dict[str, Setting] = {f.name: f.metadata["setting"] for f in fields(ConnectionSettings)}
# Each field's default, where it has a plain one (servers' is made per instance).
SETTING_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in fields(ConnectionSettings) if f.default is not MISSING
}
URL_FIELD = "servers"  # given as a URL (``url``, ``NATS_URL``, ``--url``), not as an option
SECRET_FIELDS = tuple(name for name, row in SETTINGS.items() if row.secret)
# Environment variables read by from_env(), the same names the nats CLI uses where it has one.
ENV_VARS = {row.env: name for name, row in SETTINGS.items() if row.env}
# The variables of natsobj's own namespace it reads: a near miss of one is refused.
ENV_PREFIX = "NATSOBJ_"
KNOWN_ENV = frozenset(
    name for name in (*ENV_VARS, DATA_DIR_ENV, "NATSOBJ_SERVER_BIN") if name.startswith(ENV_PREFIX)
)
# Option names (URL query parameters, Spark options, ...) and the field each one sets.
OPTION_FIELDS = {
    option: name
    for name, row in SETTINGS.items()
    if name != URL_FIELD
    for option in (name, *row.aliases)
}


def _embedded_form(server: str) -> str | None:
    """``embedded`` or ``embedded-if-running`` when ``server`` is one of them, bare or with
    its data directory (``embedded:///dir``); None for a real server."""
    for form in (EMBEDDED, RUNNING_EMBEDDED):
        if server == form or server.startswith(form + ":"):
            return form
    return None


def _take_userinfo(server: str) -> tuple[str, dict[str, str]]:
    """Split ``scheme://userinfo@rest`` at the last ``@`` into ``scheme://rest`` and the
    credentials it carried: ``user:password`` or a token."""
    scheme, sep, rest = server.partition("://")
    userinfo, at, hosts = rest.rpartition("@")
    if not (sep and at) or _embedded_form(scheme):
        return server, {}
    user, colon, password = userinfo.partition(":")
    if colon:
        return f"{scheme}://{hosts}", {"user": unquote(user), "password": unquote(password)}
    return f"{scheme}://{hosts}", ({"token": unquote(user)} if user else {})


def _one_set_of_credentials(taken: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """natsobj authenticates to every server of a list the same way, so servers that carry
    different credentials are a mistake to report, not one to guess at (which set wins).
    They come with the first server: a later one carrying some when the first does not is
    what a raw ``,`` in a password makes (``u:se,cret@host``: server ``u:se``, token
    ``cret``), so it is refused too, and the message names no server, as each may hold a
    piece of that password."""
    distinct: list[dict[str, str]] = []
    for _, credentials in taken:
        if credentials and credentials not in distinct:
            distinct.append(credentials)
    if len(distinct) > 1 or (distinct and taken and not taken[0][1]):
        raise ValueError(
            "the servers of the list carry different credentials, or only a later one carries"
            " any; natsobj uses one set for every server of a list: give the user/password or"
            " token on the first server (the same on the others, if at all), or set them"
            " separately. A ',' in a user, password or token must be percent-encoded (%2C)"
        )
    return distinct[0] if distinct else {}


def _strip_path(server: str) -> str:
    """``nats://h:4222/`` -> ``nats://h:4222`` (the slash before a query)."""
    scheme, _, hosts = server.partition("://")
    return f"{scheme}://{hosts.rstrip('/')}"


def _check_server(server: str) -> None:
    """Refuse an http:// or hostless URL at once, rather than after a failed connect. A
    scheme that is not a word is not echoed: it may be part of a mistyped password."""
    scheme, _, rest = server.partition("://")
    host = rest.split("?")[0].strip("/")
    if scheme.lower() not in URL_SCHEMES or not host:
        shown = f"a {scheme} URL" if scheme.isalnum() else "a URL"
        raise ValueError(
            f"must look like nats://host:4222 (schemes {list(URL_SCHEMES)}) or 'embedded'; "
            f"got {shown} for host {host!r}"
        )


def check_gateway_url(url: str) -> None:
    """An S3 gateway endpoint is ``http(s)://HOST[:PORT]``: refused at once otherwise, not when
    a presigned URL is made with it."""
    scheme, sep, rest = url.partition("://")
    if scheme not in ("http", "https") or not sep or not rest.split("/")[0]:
        raise ValueError(f"gateway_url must look like http://HOST:PORT, not {url!r}")


def check_options(
    given: Iterable[str], known: Collection[str], what: str, *, near_misses_only: bool = False
) -> None:
    """The one rule for options on every face (fsspec, Spark, Dagster, URLs, environment):
    a name that is not known is refused, naming the known ones, never ignored, so a typo
    cannot silently change which server is used. ``near_misses_only`` is for a namespace
    natsobj shares (the environment): only a name close to a known one is refused."""
    for name in given:
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        if near_misses_only and not close:
            continue
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownOption(f"unknown {what} {name!r}{guess}; known: {', '.join(sorted(known))}")


def _clean(overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in overrides.items() if v is not None}
