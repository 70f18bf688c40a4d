"""The object formats a table read decodes (Parquet, CSV, JSON, text) and the options of
Spark's own CSV, JSON and text sources that apply to them, under Spark's names and defaults.

``FILE_OPTIONS`` is the one table of them: the batch and streaming parsers read it, the
known-option list (``natsobj.spark.options.KNOWN_OPTIONS``) is built from it, and docs/spark.md's
option map is checked against it by a test, so a name cannot be accepted in one place and
missing in another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from natsobj.parsing import parse_bool
from natsobj.spark.errors import BadSparkOption

AUTO = "auto"
PARQUET = "parquet"
CSV = "csv"
JSON = "json"
TEXT = "text"
OBJECT_FORMATS = (AUTO, PARQUET, CSV, JSON, TEXT)
# What an object's extension says it holds, when objectFormat is auto (after a compression
# suffix, which Spark also reads by extension: `raw/a.csv.gz`).
EXTENSIONS = {
    ".parquet": PARQUET,
    ".pq": PARQUET,
    ".csv": CSV,
    ".json": JSON,
    ".jsonl": JSON,
    ".ndjson": JSON,
    ".txt": TEXT,
}
# Compression suffix -> the pyarrow codec that reads it (Spark picks a codec by extension too;
# its `compression` option is for writers only).
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


@dataclass(frozen=True)
class FileOption:
    """One option of Spark's CSV/JSON/text sources that natsobj reads the same way."""

    name: str  # as Spark spells it
    formats: tuple[str, ...]
    default: str
    meaning: str
    aliases: tuple[str, ...] = ()
    flag: bool = False

    def spellings(self) -> tuple[str, ...]:
        """The lower-cased keys it may be given under (Spark's options are case-insensitive)."""
        return tuple(k.lower() for k in (self.name, *self.aliases))


FILE_OPTIONS = (
    FileOption(
        "header", (CSV,), "false", "the first line of each object names the columns", flag=True
    ),
    FileOption(
        "inferSchema",
        (CSV,),
        "false",
        "infer column types (int, bigint, double, boolean, date, timestamp) from the first "
        "object instead of reading every column as string",
        flag=True,
    ),
    FileOption("sep", (CSV,), ",", "field separator, one character", aliases=("delimiter",)),
    FileOption("quote", (CSV,), '"', "quote character"),
    FileOption("escape", (CSV,), "\\", "escapes a quote inside a quoted value"),
    FileOption("nullValue", (CSV,), "", "the text read as null (an empty field is null)"),
    FileOption("comment", (CSV,), "", "lines starting with this character are skipped"),
    FileOption(
        "multiLine",
        (CSV, JSON),
        "false",
        "CSV: quoted values may span lines; JSON: each object is one JSON document or array "
        "of records instead of JSON Lines",
        flag=True,
    ),
    FileOption("lineSep", (CSV, JSON, TEXT), "", "line separator (default: \\n, \\r\\n or \\r)"),
    FileOption("encoding", (CSV, JSON, TEXT), "UTF-8", "character set", aliases=("charset",)),
    FileOption(
        "wholetext", (TEXT,), "false", "one row per object instead of one per line", flag=True
    ),
)
FILE_OPTION_KEYS = frozenset(k for option in FILE_OPTIONS for k in option.spellings())
# Options of Spark's file sources natsobj does not implement: refused, so a read never
# quietly differs from what the option asked for.
UNSUPPORTED = frozenset(
    {
        "dateformat",
        "timestampformat",
        "timestampntzformat",
        "primitivesasstring",
        "prefersdecimal",
        "samplingratio",
        "enforceschema",
        "columnnameofcorruptrecord",
        "ignoreleadingwhitespace",
        "ignoretrailingwhitespace",
        "emptyvalue",
        "maxcolumns",
        "locale",
    }
)


@dataclass(frozen=True)
class FileFormat:
    """How a task decodes a CSV, JSON or text object; the defaults are Spark's."""

    header: bool = False
    infer_schema: bool = False
    sep: str = ","
    quote: str = '"'
    escape: str = "\\"
    null_value: str = ""
    comment: str = ""
    multi_line: bool = False
    line_sep: str = ""
    encoding: str = "utf-8"
    wholetext: bool = False

    @classmethod
    def parse(
        cls,
        values: Mapping[str, str],
        bucket: str,
        *,
        object_format: str = AUTO,
        header_default: bool = False,
    ) -> FileFormat:
        """From lower-cased option keys. ``header_default`` is true for the streaming source,
        which has always read CSV with a header line."""
        refused = sorted(UNSUPPORTED & set(values))
        if refused:
            raise BadSparkOption(
                f"option {refused[0]!r} of Spark's CSV/JSON sources is not supported by natsobj",
                bucket=bucket,
                hint="Read the column as a string and convert it with Spark (to_date, "
                "to_timestamp, cast), or give .schema(...).",
            )
        given = {option.name: _given(values, option, bucket) for option in FILE_OPTIONS}
        header = given["header"]
        parsed = cls(
            header=header_default if header is None else _flag(header, "header", bucket),
            infer_schema=_flag(given["inferSchema"] or "false", "inferSchema", bucket),
            sep=_char(given["sep"], ",", "sep", bucket),
            quote=_char(given["quote"], '"', "quote", bucket),
            escape=_char(given["escape"], "\\", "escape", bucket),
            null_value=given["nullValue"] or "",
            comment=given["comment"] or "",
            multi_line=_flag(given["multiLine"] or "false", "multiLine", bucket),
            line_sep=given["lineSep"] or "",
            encoding=(given["encoding"] or "utf-8").lower(),
            wholetext=_flag(given["wholetext"] or "false", "wholetext", bucket),
        )
        if parsed.line_sep not in ("", "\n", "\r\n", "\r") and object_format != TEXT:
            raise BadSparkOption(
                f"option lineSep {parsed.line_sep!r} is only read with objectFormat text; CSV "
                "and JSON lines end with \\n, \\r\\n or \\r, as pyarrow parses them",
                bucket=bucket,
            )

        if len(parsed.comment) > 1:
            raise BadSparkOption("option comment must be one character", bucket=bucket)
        return parsed


def format_of(name: str, configured: str) -> str | None:
    """The format of object ``name``: the configured one, or by its extension (None: none)."""
    if configured != AUTO:
        return configured
    base, _ = split_compression(name)
    for extension, fmt in EXTENSIONS.items():
        if base.lower().endswith(extension):
            return fmt
    return None


def split_compression(name: str) -> tuple[str, str | None]:
    """``a.csv.gz`` -> (``a.csv``, ``gzip``): the codec its extension names, as Spark reads."""
    for suffix, codec in COMPRESSIONS.items():
        if name.lower().endswith(suffix):
            return name[: -len(suffix)], codec
    return name, None


def parse_object_format(values: Mapping[str, str], bucket: str) -> str:
    """Option objectFormat (or ``format``, the name Spark's generic reader uses)."""
    given = {str(values[k]).lower() for k in ("objectformat", "format") if values.get(k)}
    if len(given) > 1:
        raise BadSparkOption(
            f"options objectFormat and format disagree: {sorted(given)}", bucket=bucket
        )
    fmt = given.pop() if given else AUTO
    if fmt not in OBJECT_FORMATS:
        raise BadSparkOption(
            f"objectFormat must be one of {list(OBJECT_FORMATS)}, got {fmt!r}", bucket=bucket
        )
    return fmt


def check_write_format(object_format: str, bucket: str) -> None:
    """A write stores a Parquet dataset (parts and a manifest, the commit point); a format
    option asking for another is refused rather than ignored."""
    if object_format in (AUTO, PARQUET):
        return
    raise BadSparkOption(
        f"format {object_format!r} cannot be written: format('natsobj') writes Parquet "
        "datasets (parts and a _manifest.json commit), read back by Spark and every natsobj face",
        bucket=bucket,
        hint="Drop the format/objectFormat option on the write; to store CSV or JSON files, "
        "write them to local files with Spark's own writer and copy them with "
        "`natsobj put -r`, or write them with pandas or pyarrow to nats:// paths.",
    )


def _given(values: Mapping[str, str], option: FileOption, bucket: str) -> str | None:
    found = {str(values[k]) for k in option.spellings() if k in values}
    if len(found) > 1:
        raise BadSparkOption(
            f"option {option.name} is given twice, as {sorted(found)}", bucket=bucket
        )
    return found.pop() if found else None


def _flag(value: str, name: str, bucket: str) -> bool:
    try:
        return parse_bool(value, what=f"option {name!r}")
    except ValueError as exc:
        raise BadSparkOption(str(exc), bucket=bucket) from None


def _char(value: str | None, default: str, name: str, bucket: str) -> str:
    text = default if value is None else value
    if len(text) != 1:
        raise BadSparkOption(f"option {name} must be one character, got {text!r}", bucket=bucket)
    return text
