"""The values of hive-style partition folders (``<col>=<value>``), by Spark's own rules
(``ExternalCatalogUtils`` and ``PartitioningUtils``): how a value is written into a folder
name and read back, and which Spark type discovery gives a column from its folders' texts.

- values are written as Spark casts them to strings, with the characters Spark escapes as
  ``%XX``; null and the empty string are ``__HIVE_DEFAULT_PARTITION__``;
- discovery types each column as Spark's ``partitionColumnTypeInference`` does (int, long,
  decimal for larger integers, double, timestamp, date, else string) and widens across
  values as Spark does.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from natsobj.spark.errors import BadSparkOption

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# ExternalCatalogUtils.charToEscape (not the Windows-only additions): control characters,
# DEL and "#%'*/:=?\{[]^.
_ESCAPED = frozenset([*map(chr, range(1, 0x20)), *"\"#%'*/:=?\\\x7f{[]^"])
_HEX_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")

_INT = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(
    r"\s*[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)\s*"
)  # java.lang.Double.parseDouble's decimal forms
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{1,2}-\d{1,2} \d{1,2}:\d{2}:\d{2}(\.\d{1,9})?")
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


def escape(value: str) -> str:
    """Spark's ``escapePathName``: the characters it escapes as ``%XX`` (upper-case hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def unescape(value: str) -> str:
    """Spark's ``unescapePathName``: every ``%XX`` back to its character."""
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value)


def directory(columns: Sequence[str], texts: Sequence[str | None]) -> str:
    """``col=value/...`` for one partition; ``texts`` are the values as strings."""
    return "/".join(
        f"{escape(c)}={DEFAULT_PARTITION if not t else escape(t)}"
        for c, t in zip(columns, texts, strict=True)
    )


def is_hidden(segment: str) -> bool:
    """Names Spark's file listing skips: ``.x``, and ``_x`` unless it is a ``_col=value``
    partition directory."""
    return segment.startswith(".") or (segment.startswith("_") and "=" not in segment)


def path_values(prefix: str, name: str) -> tuple[tuple[str, str], ...]:
    """The ``(column, raw value)`` pairs of the folders between ``prefix`` and the object
    ``name``, as written (escaped); none for an object not under ``prefix``."""
    head = prefix + "/" if prefix else ""
    if not name.startswith(head):
        return ()
    folders = name[len(head) :].split("/")[:-1]
    pairs = [segment.partition("=") for segment in folders]
    return tuple((unescape(c), raw) for c, sep, raw in pairs if sep and c)


# -- types ----------------------------------------------------------------------------------------
# Spark's JSON type names (StructType.jsonValue): what schemas and manifests hold.


def infer_type(raw: str) -> str:
    """Spark's ``inferPartitionColumnValue`` with type inference on, for one raw (escaped)
    value; ``"null"`` for the default partition."""
    if raw == DEFAULT_PARTITION:
        return "null"
    if _INT.fullmatch(raw):
        number = int(raw)
        if _INT_RANGE[0] <= number <= _INT_RANGE[1]:
            return "integer"
        if _LONG_RANGE[0] <= number <= _LONG_RANGE[1]:
            return "long"
        digits = len(raw.lstrip("+-"))
        if digits <= 38:
            return f"decimal({digits},0)"
    if _DOUBLE.fullmatch(raw):
        return "double"
    text = unescape(raw)
    if _timestamp(text) is not None:
        return "timestamp"
    if _date(raw) is not None:
        return "date"
    return "string"


def wider(a: str, b: str) -> str:
    """Spark's ``findWiderTypeForPartitionColumn``: the type two values of one column share."""
    if a == b:
        return a
    if "null" in (a, b):
        return b if a == "null" else a
    numbers = {"integer": 10, "long": 20}
    pair = {a, b}
    if pair <= {"integer", "long"}:
        return "long"
    if pair == {"integer", "double"}:
        return "double"
    decimals = [t for t in pair if t.startswith("decimal")]
    if decimals and pair - set(decimals) <= set(numbers):
        precision = max(
            numbers.get(t) or int(re.findall(r"\d+", t)[0]) for t in pair
        )  # integral widening keeps scale 0
        return f"decimal({min(precision, 38)},0)"
    if pair == {"date", "timestamp"}:
        return "timestamp"
    return "string"


def typed(raw: str | None, spark_type: Any) -> Any:
    """Spark's ``castPartValueToDesiredType``: the Python value of one raw value for a column
    of ``spark_type`` (a JSON type name), None for the default partition."""
    if raw is None or raw == DEFAULT_PARTITION:
        return None
    name = spark_type if isinstance(spark_type, str) else ""
    text = unescape(raw)
    try:
        if name in ("byte", "short", "integer", "long"):
            return int(raw)
        if name in ("float", "double"):
            return float(raw.strip().rstrip("fFdD"))
        if name.startswith("decimal"):
            return Decimal(raw)
        if name == "boolean":
            return text.lower() == "true"
        if name == "date":
            return _date(raw)
        if name == "timestamp":
            return _timestamp(text) or _at_midnight(_date(raw))
        if name == "timestamp_ntz":
            stamp = _timestamp(text) or _at_midnight(_date(raw))
            return None if stamp is None else stamp.replace(tzinfo=None)
        if name == "string":
            return text
        if name == "binary":
            return raw.encode()
    except (ValueError, ArithmeticError):
        return None  # a value that does not cast is null, as Spark's cast makes it
    raise BadSparkOption(
        f"a partition column cannot be read as {spark_type!r}",
        hint="Give partition columns an atomic type (string, numbers, date, timestamp).",
    )


def _date(text: str) -> dt.date | None:
    if not _DATE.fullmatch(text):
        return None
    year, month, day = (int(p) for p in text.split("-"))
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _timestamp(text: str) -> dt.datetime | None:
    """A ``yyyy-MM-dd HH:mm:ss[.S]`` value in the local time zone, which is Spark's session
    time zone unless the session sets another."""
    if not _TIMESTAMP.fullmatch(text):
        return None
    day, _, clock = text.partition(" ")
    whole, _, fraction = clock.partition(".")
    date = _date(day)
    if date is None:
        return None
    hour, minute, second = (int(p) for p in whole.split(":"))
    micros = int((fraction + "000000")[:6]) if fraction else 0
    try:
        local = dt.datetime(date.year, date.month, date.day, hour, minute, second, micros)
    except ValueError:
        return None
    return local.astimezone()


def _at_midnight(date: dt.date | None) -> dt.datetime | None:
    return None if date is None else dt.datetime(date.year, date.month, date.day).astimezone()
