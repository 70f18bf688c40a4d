"""Parse and check the options of ``format("natsobj")`` once, on the driver.

The same frozen ``SourceOptions`` is pickled into every reader and writer task, so executors
never re-read the environment and a bad option fails before any task is scheduled.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from natsobj.errors import UnknownOption
from natsobj.lifecycle import checked_ttl
from natsobj.local.embedded_rule import resolve_server
from natsobj.matching import NameMatcher
from natsobj.names import check_bucket
from natsobj.operation_options import Face, for_face, resolve
from natsobj.parsing import parse_bool, parse_count, parse_duration
from natsobj.paths import is_nats_url, parse_nats_url
from natsobj.settings import OPTION_FIELDS, SETTING_DEFAULTS, ConnectionSettings, check_options
from natsobj.spark import partitions
from natsobj.spark.errors import BadSparkOption, CatalogTableUnsupported
from natsobj.spark.file_options import (
    AUTO,
    FILE_OPTION_KEYS,
    UNSUPPORTED,
    FileFormat,
    parse_object_format,
)
from natsobj.store_config import STORE_SETTINGS, StoreConfig

log = logging.getLogger("natsobj.spark")

TABLE = "table"
BINARY = "binary"
LAYOUTS = (TABLE, BINARY)
# `mode` was the layout option's name until 0.x; it collides with .mode() and with the parse
# mode of Spark's file sources (PERMISSIVE, FAILFAST...), which are ignored like other options.
DEPRECATED_LAYOUT_OPTION = "mode"
IF_EXISTS = ("error", "ignore")
# The operations whose options (natsobj.operation_options) the batch source and sink take:
# their spellings, vocabularies and Spark defaults come from that table, not from here.
TABLE_OPERATIONS = ("get", "write_parquet")

# Spark option name -> ConnectionSettings field: the same names a NATS URL's query takes.
# Secrets travel as their own options (never inside "url") so Spark's redaction of
# "password"/"token" keys hides them in plans and UIs.
CONNECTION_OPTIONS = OPTION_FIELDS
DEFAULTS = {
    "layout": TABLE,
    "rows_per_object": "1000000",
    "retain_generations": "1",
    "create_bucket": "true",
    "pushdown": "false",
}


BASE_PATH = "basepath"


def table_keys(operation: str) -> frozenset[str]:
    """The lower-cased keys the options of ``operation`` may be given under (camelCase as
    the table spells them for Spark, or the snake_case name)."""
    return frozenset(k for o in for_face(Face.SPARK, operation).values() for k in o.spark_keys())


# bucket_<setting>: what a write that creates the bucket creates it with (the store settings
# table, natsobj.store_config); an unknown bucket_ option is refused, not ignored.
BUCKET_OPTION_PREFIX = "bucket_"
BUCKET_DESCRIPTION = "natsobj Spark datasets"
KNOWN_OPTIONS = frozenset(
    {"url", "bucket", "path", "prefix", "if_exists", "glob", "write_id", "superseded_ttl"}
    | {BASE_PATH}
    | {partitions.OPTION}
    | {"objectformat", "format"}
    | FILE_OPTION_KEYS
    | set(CONNECTION_OPTIONS)
    | set(DEFAULTS)
    | {BUCKET_OPTION_PREFIX + name for name in STORE_SETTINGS}
    | {key for operation in TABLE_OPERATIONS for key in table_keys(operation)}
)


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader or writer task needs; ``repr`` redacts secrets via the settings."""

    settings: ConnectionSettings
    bucket: str
    prefix: str
    # What the bucket is created with when a write creates it (create_bucket): the bucket_
    # options; an existing bucket is left as it is.
    bucket_config: StoreConfig
    # Parquet writing (write_parquet) and reading (get) options of the operation table.
    row_group_rows: int
    compression: str
    dictionary: bool  # Parquet dictionary encoding: see arrowio.parquet_stream
    # Read objects whose record has no digest (from a client that writes none): off, so such
    # an object fails the read with MissingDigest unless the job opts out.
    allow_missing_digest: bool
    layout: str = TABLE
    rows_per_object: int = 1_000_000
    retain_generations: int = 1
    # Parts an overwrite supersedes expire this long after it (server-side TTL) instead of
    # being deleted by the commit `retain_generations` generations later: see manifest.py.
    superseded_ttl: timedelta | None = None
    create_bucket: bool = True
    pushdown: bool = False
    if_exists: str | None = None
    glob: str | None = None
    # Table reads of objects without a manifest: their format (auto: by extension) and how
    # CSV, JSON and text are decoded (Spark's options of those sources, file_options).
    object_format: str = AUTO
    file_format: FileFormat = dataclasses.field(default_factory=FileFormat)
    write_id: str | None = None
    embedded: str | None = None  # the `embedded` URL the driver resolved into `settings`
    partition_by: tuple[str, ...] = ()  # writes: hive-style partition columns (partitions.py)
    # Reads of a partition folder (folders.py): the dataset whose folder `prefix` is, to keep
    # the folder's columns, as Spark's option of that name does.
    base_path: str | None = None

    @property
    def where(self) -> str:
        return f"bucket {self.bucket!r}, prefix {self.prefix!r}"

    @classmethod
    def parse(cls, options: Mapping[str, str], *, header_default: bool = False) -> SourceOptions:
        """``header_default``: whether a CSV object has a header line unless option header
        says; true for the streaming source, which has always read CSV that way."""
        opts = {str(k).lower(): v for k, v in options.items() if v is not None}
        _refuse_catalog_table(opts)
        _take_deprecated_layout(opts)
        _ignore_unknown(opts)
        values = {**DEFAULTS, **opts}
        _take_bucket_from_url_path(values)
        glob = values.get("glob") or None
        if glob and not (values.get("path") or values.get("prefix")):
            # A glob needs no dataset prefix: it says where the objects are.
            values["prefix"] = glob_directory(glob)
        bucket = values.get("bucket")
        if not bucket:
            raise BadSparkOption(
                "option 'bucket' is required",
                hint='Add .option("bucket", "<bucket name>"), or load("nats://<bucket>/<prefix>").',
            )
        check_bucket(bucket)
        layout = values["layout"].lower()
        if layout not in LAYOUTS:
            raise BadSparkOption(
                f"unknown layout {values['layout']!r}; use one of {list(LAYOUTS)} "
                "(write modes are set with .mode('append'|'overwrite'))",
                bucket=bucket,
            )
        prefix = _prefix(values, bucket, layout)
        if glob is not None:
            NameMatcher(glob, "glob")  # a bad pattern fails here, not in a task
        if_exists = values.get("if_exists")
        if if_exists is not None and if_exists.lower() not in IF_EXISTS:
            raise BadSparkOption(
                f"if_exists must be one of {list(IF_EXISTS)}, got {if_exists!r}", bucket=bucket
            )
        table = {
            name: value
            for operation in TABLE_OPERATIONS
            for name, value in table_options(values, operation, bucket).items()
        }
        rows_per_object = count_option(values, "rows_per_object", bucket)
        retain_generations = count_option(values, "retain_generations", bucket, minimum=0)
        superseded_ttl = _duration(values, "superseded_ttl", bucket)
        create_bucket = _flag(values, "create_bucket", bucket)
        pushdown = _flag(values, "pushdown", bucket)
        bucket_config = _bucket_config(values, bucket)
        object_format = parse_object_format(values, bucket)
        file_format = FileFormat.parse(
            values, bucket, object_format=object_format, header_default=header_default
        )
        base_path = _base_path(values, bucket)
        settings = connection_settings(values)
        embedded = settings.servers[0] if settings.embedded_dir is not None else None
        if embedded is not None:
            # Resolve on the driver, once, and only for options that passed every check above
            # (resolving starts the server): every executor must reach the driver's server.
            # Resolving on executors would start one server per machine and split the data.
            settings = resolve_server(settings)
        return cls(
            settings=settings,
            bucket=bucket,
            prefix=prefix,
            bucket_config=bucket_config,
            row_group_rows=table["row_group_rows"],
            compression=table["compression"],
            dictionary=table["dictionary"],
            allow_missing_digest=table["allow_missing_digest"],
            layout=layout,
            rows_per_object=rows_per_object,
            retain_generations=retain_generations,
            superseded_ttl=superseded_ttl,
            create_bucket=create_bucket,
            pushdown=pushdown,
            if_exists=if_exists.lower() if if_exists else None,
            glob=glob,
            object_format=object_format,
            file_format=file_format,
            base_path=base_path,
            write_id=values.get("write_id") or None,
            embedded=embedded,
            partition_by=partitions.requested(values, bucket),
        )


def _refuse_catalog_table(opts: Mapping[str, str]) -> None:
    """A catalog table cannot keep its options (``CatalogTableUnsupported``). Spark names the
    table's provider in the options only when ``CREATE TABLE`` asks the source for a schema,
    and reads and writes of a catalog table arrive with no options at all."""
    if "provider" in opts:
        raise CatalogTableUnsupported(
            f"CREATE TABLE ... USING {opts['provider']} cannot keep its OPTIONS: Spark does not "
            "pass a catalog table's options to a Python data source when the table is read "
            "or written"
        )
    if not opts:
        raise CatalogTableUnsupported(
            "format('natsobj') was given no options at all, so there is no bucket to use; "
            "a catalog table (CREATE TABLE ... USING natsobj, saveAsTable) arrives like "
            "this, since Spark does not pass its options to a Python data source",
            hint='Give the options (.option("bucket", ...), load("nats://<bucket>/<prefix>")); '
            + CatalogTableUnsupported.hint,
        )


def _take_deprecated_layout(opts: dict[str, str]) -> None:
    """``mode=table|binary`` still works for one release, with a warning; any other ``mode``
    (a parse mode from a copied CSV snippet) is left to be ignored as an unknown option."""
    value = opts.get(DEPRECATED_LAYOUT_OPTION)
    if value is None or str(value).lower() not in LAYOUTS:
        return
    del opts[DEPRECATED_LAYOUT_OPTION]
    message = (
        f"natsobj option 'mode={value}' is deprecated and will be removed in the next release; "
        f"use 'layout={value}' ('mode' collides with .mode() and Spark's parse mode)"
    )
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    log.warning(message)
    opts.setdefault("layout", value)


def _ignore_unknown(opts: dict[str, str]) -> None:
    """Drop options this source does not know, as Spark's built-in sources do. Users expect
    that: one ``.options(**common)`` is often shared by several formats, and a snippet copied
    from a Parquet job (``mergeSchema``) must not fail a job. What they do not expect is a
    typo that silently changes the read, so a near miss of a known name (``hedaer``) is
    refused naming the known options (``check_options``, the rule every face shares), and so
    is an option of Spark's CSV/JSON sources natsobj does not implement (``dateFormat``):
    ignoring it would return different values than the option asked for."""
    unknown = sorted(set(opts) - KNOWN_OPTIONS)
    typos = [name for name in unknown if not _refused_later(name)]
    try:
        check_options(typos, KNOWN_OPTIONS, "natsobj option", near_misses_only=True)
    except UnknownOption as exc:
        raise BadSparkOption(exc.message) from None
    for name in unknown:
        if _refused_later(name):
            continue  # ours to refuse: _bucket_config and FileFormat.parse name the problem
        del opts[name]
        log.debug("natsobj: ignoring option %r, which this source does not use", name)


def glob_directory(glob: str) -> str:
    """The folder every match of ``glob`` lives in ("" for a glob that starts with a wildcard)."""
    literal = NameMatcher(glob, "glob").literal_prefix
    return literal.rpartition("/")[0]


def _refused_later(name: str) -> bool:
    """An unknown ``bucket_`` option, or an option of Spark's file sources natsobj does not
    implement: refused with its own message rather than ignored."""
    return name.startswith(BUCKET_OPTION_PREFIX) or name in UNSUPPORTED


def _take_bucket_from_url_path(values: dict[str, str]) -> None:
    """``load("nats://bucket/prefix")`` names the bucket in the path, as the fsspec
    filesystem reads it; an explicit bucket option must then agree."""
    path = values.get("path")
    if not path or not is_nats_url(path):
        return
    parsed = parse_nats_url(path)
    bucket = values.get("bucket")
    if bucket and bucket != parsed.bucket:
        raise BadSparkOption(
            f"path {path!r} names bucket {parsed.bucket!r} but option 'bucket' is {bucket!r}",
            bucket=bucket,
        )
    values["bucket"], values["path"] = parsed.bucket, parsed.key


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
        if value is not None and value != SETTING_DEFAULTS.get(field):
            out[field] = str(value)
    return out


def _join_servers(servers: list[str]) -> str:
    """``nats://h1:4222,h2:4222``: one scheme, the compact form of a server list."""
    first, *rest = servers
    scheme = first.partition("://")[0] + "://"
    return ",".join([first, *(s.removeprefix(scheme) for s in rest)])


def _base_path(values: Mapping[str, str], bucket: str) -> str | None:
    """Option ``basePath``: a dataset prefix, or ``nats://bucket/prefix`` naming the read's
    bucket."""
    given = values.get(BASE_PATH)
    if not given:
        return None
    if is_nats_url(given):
        parsed = parse_nats_url(given)
        if parsed.bucket != bucket:
            raise BadSparkOption(
                f"option basePath {given!r} names bucket {parsed.bucket!r}, the read {bucket!r}",
                bucket=bucket,
            )
        given = parsed.key
    return given.strip("/")


def _prefix(values: Mapping[str, str], bucket: str, layout: str) -> str:
    path, prefix = values.get("path"), values.get("prefix")
    if path and prefix and path.strip("/") != prefix.strip("/"):
        raise BadSparkOption(
            f"load()/save() path {path!r} and option 'prefix' {prefix!r} disagree", bucket=bucket
        )
    cleaned = (path or prefix or "").strip("/")
    if not cleaned and layout == TABLE:
        raise BadSparkOption(
            "a dataset prefix is required",
            bucket=bucket,
            hint='Pass it to load("sales/daily") / save("sales/daily") or .option("prefix", ...).',
        )
    return cleaned


def _bucket_config(values: Mapping[str, str], bucket: str) -> StoreConfig:
    try:
        return StoreConfig.from_options(
            StoreConfig(bucket, description=BUCKET_DESCRIPTION), values, prefix=BUCKET_OPTION_PREFIX
        )
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None


def table_options(values: Mapping[str, Any], operation: str, bucket: str) -> dict[str, Any]:
    """The options of ``operation`` as the table (``natsobj.operation_options``) gives them to
    Spark, by core name: each read by its row's parser, Spark's default where not given.
    ``values`` has lower-cased keys; both spellings of one option must then agree."""
    given: dict[str, object] = {}
    for name, option in for_face(Face.SPARK, operation).items():
        found = {str(values[k]) for k in sorted(option.spark_keys()) if k in values}
        if len(found) > 1:
            raise BadSparkOption(
                f"option {option.spelled(Face.SPARK)} is given twice, as {sorted(found)}",
                bucket=bucket,
            )
        given[name] = found.pop() if found else None
    try:
        return resolve(Face.SPARK, operation, given)
    except ValueError as exc:
        raise BadSparkOption(f"option {exc}", bucket=bucket) from None


def count_option(values: Mapping[str, Any], key: str, bucket: str, *, minimum: int = 1) -> int:
    """A whole-number option (rows, generations, batch limits), by the one count parser."""
    try:
        return parse_count(values[key], what=f"option {key!r}", minimum=minimum)
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None


def _duration(values: Mapping[str, Any], key: str, bucket: str) -> timedelta | None:
    """An optional duration (``30m``, ``2h``, seconds); the server counts TTLs in whole
    seconds and a subject delete marker needs at least one."""
    if not values.get(key):
        return None
    try:
        value = parse_duration(values[key], what=f"option {key!r}")
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None
    try:
        return checked_ttl(value, f"option {key!r}")
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None


def _flag(values: Mapping[str, Any], key: str, bucket: str) -> bool:
    """A true/false option, by the vocabulary every face reads (``parse_bool``)."""
    try:
        return parse_bool(values[key], what=f"option {key!r}")
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None
