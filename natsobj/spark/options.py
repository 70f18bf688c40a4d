"""Parse and check the options of ``format("natsobj")`` once, on the driver.

The same frozen ``SourceOptions`` is pickled into every reader and writer task, so executors
never re-read the environment and a bad option fails before any task is scheduled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from natsobj.names import check_bucket
from natsobj.settings import OPTION_FIELDS, ConnectionSettings
from natsobj.spark.errors import BadSparkOption

TABLE = "table"
BINARY = "binary"
READ_MODES = (TABLE, BINARY)
IF_EXISTS = ("error", "ignore")
COMPRESSIONS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")

# Spark option name -> ConnectionSettings field: the same names a NATS URL's query takes.
# Secrets travel as their own options (never inside "url") so Spark's redaction of
# "password"/"token" keys hides them in plans and UIs.
CONNECTION_OPTIONS = OPTION_FIELDS
DEFAULTS = {
    "mode": TABLE,
    "rows_per_object": "1000000",
    "row_group_rows": "1000000",
    "compression": "zstd",
    "retain_generations": "1",
    "create_bucket": "true",
}
KNOWN_OPTIONS = frozenset(
    {"url", "bucket", "path", "prefix", "if_exists", "glob", "write_id"}
    | set(CONNECTION_OPTIONS)
    | set(DEFAULTS)
)


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader or writer task needs; ``repr`` redacts secrets via the settings."""

    settings: ConnectionSettings
    bucket: str
    prefix: str
    mode: str = TABLE
    rows_per_object: int = 1_000_000
    row_group_rows: int = 1_000_000
    compression: str = "zstd"
    retain_generations: int = 1
    create_bucket: bool = True
    if_exists: str | None = None
    glob: str | None = None
    write_id: str | None = None
    embedded: str | None = None  # the `embedded` URL the driver resolved into `settings`

    @property
    def where(self) -> str:
        return f"bucket {self.bucket!r}, prefix {self.prefix!r}"

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        opts = {str(k).lower(): v for k, v in options.items() if v is not None}
        unknown = sorted(set(opts) - KNOWN_OPTIONS)
        if unknown:
            raise BadSparkOption(
                f"unknown natsobj option(s) {unknown}; known options: {sorted(KNOWN_OPTIONS)}"
            )
        values = {**DEFAULTS, **opts}
        bucket = values.get("bucket")
        if not bucket:
            raise BadSparkOption(
                "option 'bucket' is required",
                hint='Add .option("bucket", "<bucket name>") to the reader or writer.',
            )
        check_bucket(bucket)
        mode = values["mode"].lower()
        if mode not in READ_MODES:
            raise BadSparkOption(
                f"unknown mode {values['mode']!r}; use one of {list(READ_MODES)} "
                "(write modes are set with .mode('append'|'overwrite'))",
                bucket=bucket,
            )
        prefix = _prefix(values, bucket, mode)
        if_exists = values.get("if_exists")
        if if_exists is not None and if_exists.lower() not in IF_EXISTS:
            raise BadSparkOption(
                f"if_exists must be one of {list(IF_EXISTS)}, got {if_exists!r}", bucket=bucket
            )
        compression = values["compression"].lower()
        if compression not in COMPRESSIONS:
            raise BadSparkOption(
                f"compression must be one of {list(COMPRESSIONS)}, got {compression!r}",
                bucket=bucket,
            )
        settings = connection_settings(values)
        embedded = settings.servers[0] if settings.embedded_dir is not None else None
        if embedded is not None:
            # Resolve on the driver, once: every executor must reach the driver's server.
            # Resolving on executors would start one server per machine and split the data.
            settings = settings.resolved()
        return cls(
            settings=settings,
            bucket=bucket,
            prefix=prefix,
            mode=mode,
            rows_per_object=_positive(values, "rows_per_object", bucket),
            row_group_rows=_positive(values, "row_group_rows", bucket),
            compression=compression,
            retain_generations=_positive(values, "retain_generations", bucket, minimum=0),
            create_bucket=_flag(values, "create_bucket", bucket),
            if_exists=if_exists.lower() if if_exists else None,
            glob=values.get("glob") or None,
            write_id=values.get("write_id") or None,
            embedded=embedded,
        )


def connection_settings(values: Mapping[str, str]) -> ConnectionSettings:
    """Build settings from the url option plus separate credential options.

    Without ``url`` the driver's NATS_* environment is used; it is then pickled into the tasks,
    so executors connect to the same server whatever their own environment says."""
    overrides = {
        target: values[option]
        for option, target in CONNECTION_OPTIONS.items()
        if values.get(option)
    }
    url = values.get("url")
    try:
        return ConnectionSettings.coerce(url, **overrides)
    except ValueError as exc:
        raise BadSparkOption(
            f"option 'url' {exc}" if url is not None else f"bad connection options: {exc}",
            hint="Put credentials in the user/password/token options, not in the URL.",
        ) from None


def settings_options(settings: ConnectionSettings) -> dict[str, str]:
    """The inverse of ``connection_settings``: options that rebuild ``settings`` on executors."""
    out = {"url": _join_servers(settings.servers)}
    for field in sorted(set(CONNECTION_OPTIONS.values())):  # every field is its own option name
        value = getattr(settings, field)
        if value is not None and not (field == "connect_timeout" and value == 5.0):
            out[field] = str(value)
    return out


def _join_servers(servers: list[str]) -> str:
    """``nats://h1:4222,h2:4222``: one scheme, the compact form of a server list."""
    first, *rest = servers
    scheme = first.partition("://")[0] + "://"
    return ",".join([first, *(s.removeprefix(scheme) for s in rest)])


def _prefix(values: Mapping[str, str], bucket: str, mode: str) -> str:
    path, prefix = values.get("path"), values.get("prefix")
    if path and prefix and path.strip("/") != prefix.strip("/"):
        raise BadSparkOption(
            f"load()/save() path {path!r} and option 'prefix' {prefix!r} disagree", bucket=bucket
        )
    cleaned = (path or prefix or "").strip("/")
    if not cleaned and mode == TABLE:
        raise BadSparkOption(
            "a dataset prefix is required",
            bucket=bucket,
            hint='Pass it to load("sales/daily") / save("sales/daily") or .option("prefix", ...).',
        )
    return cleaned


def _positive(values: Mapping[str, Any], key: str, bucket: str, *, minimum: int = 1) -> int:
    try:
        number = int(str(values[key]).replace("_", ""))
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise BadSparkOption(
            f"option {key!r} must be an integer >= {minimum}, got {values[key]!r}", bucket=bucket
        )
    return number


def _flag(values: Mapping[str, Any], key: str, bucket: str) -> bool:
    text = str(values[key]).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise BadSparkOption(
        f"option {key!r} must be true or false, got {values[key]!r}", bucket=bucket
    )
