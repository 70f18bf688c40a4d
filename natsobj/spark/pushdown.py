"""Filter pushdown for table reads: skip parts and row groups that Parquet statistics prove
cannot hold a matching row.

Skipping is only ever an optimization: every filter is still handed back to Spark, which
evaluates it on the rows that are read, so a filter this module does not understand, a
column without statistics, or values of mismatched types simply read everything.

Statistics are per column ``[min, max, null_count]`` of top-level columns with JSON-safe values
(integers, strings, booleans; not floating point, whose NaN the Parquet min/max leave out).
Writers store them per part in the manifest, so whole parts are skipped at planning; readers
take them per row group from the part's footer.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq

try:  # PySpark 4.1: Spark hands a Python data source the filters it may push
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        IsNotNull,
        IsNull,
        LessThan,
        LessThanOrEqual,
    )

    _OPS: dict[type, str] = {
        EqualTo: "eq",
        GreaterThan: "gt",
        GreaterThanOrEqual: "ge",
        LessThan: "lt",
        LessThanOrEqual: "le",
        In: "in",
        IsNull: "null",
        IsNotNull: "notnull",
    }
except ImportError:  # PySpark 4.0: it never calls pushFilters, so every part is read
    _OPS = {}

# Whether the installed Spark pushes filters to a Python data source at all.
FILTERS_PUSHED = bool(_OPS)

ColumnStats = dict[str, list[Any]]  # column -> [min, max, null_count]

_JSON_TYPES = (bool, int, float, str)
# Values a condition keeps: those of statistics, and those of partition columns (dates,
# decimals), which skip parts by their folders (natsobj.spark.partitions.may_hold).
_CONDITION_TYPES = (*_JSON_TYPES, dt.date, Decimal)


@dataclass(frozen=True)
class Condition:
    """One pushed filter on one top-level column, in a form that pickles without pyspark."""

    op: str  # "eq", "gt", "ge", "lt", "le", "in", "null", "notnull"
    column: str
    values: tuple[Any, ...] = ()


def conditions(filters: Iterable[Any]) -> list[Condition]:
    """The filters statistics can decide; the others are left out (Spark applies them all)."""
    out = []
    for item in filters:
        op = _OPS.get(type(item))
        if op is None or len(item.attribute) != 1:  # nested fields have no column statistics
            continue
        value = getattr(item, "value", ())
        values = tuple(value) if op == "in" else ((value,) if op not in ("null", "notnull") else ())
        if all(isinstance(v, _CONDITION_TYPES) for v in values):
            out.append(Condition(op, item.attribute[0], values))
    return out


def may_match(stats: ColumnStats | None, where: Sequence[Condition]) -> bool:
    """False only when the statistics prove no row satisfies all of ``where``."""
    if not stats or not where:
        return True
    return all(_may_hold(stats.get(c.column), c) for c in where)


def _may_hold(stat: list[Any] | None, cond: Condition) -> bool:
    if stat is None:
        return True
    low, high, nulls = stat
    if cond.op == "null":
        return nulls is None or nulls > 0
    if low is None or high is None or cond.op == "notnull":  # no min/max: cannot decide
        return True
    try:
        if cond.op == "eq":
            return low <= cond.values[0] <= high
        if cond.op == "in":
            return any(low <= v <= high for v in cond.values)
        value = cond.values[0]
        return {
            "gt": high > value,
            "ge": high >= value,
            "lt": low < value,
            "le": low <= value,
        }[cond.op]
    except TypeError:  # values of another type than the column's: cannot decide
        return True


def row_group_stats(metadata: pq.FileMetaData, index: int) -> ColumnStats:
    group = metadata.row_group(index)
    out: ColumnStats = {}
    for j in range(group.num_columns):
        column = group.column(j)
        stat = column.statistics
        path = column.path_in_schema
        # Floating point is left out: min/max ignore NaN, which Spark orders above every number.
        if stat is None or "." in path or stat.physical_type in ("FLOAT", "DOUBLE"):
            continue
        low, high = (stat.min, stat.max) if stat.has_min_max else (None, None)
        if not (_usable(low) and _usable(high)):
            continue
        out[path] = [low, high, stat.null_count if stat.has_null_count else None]
    return out


def file_stats(metadata: pq.FileMetaData) -> ColumnStats:
    """Statistics of the whole file: columns every row group has statistics for."""
    merged: ColumnStats | None = None
    for index in range(metadata.num_row_groups):
        group = row_group_stats(metadata, index)
        if merged is None:
            merged = group
            continue
        merged = {k: _merge(merged[k], group[k]) for k in merged.keys() & group.keys()}
    return merged or {}


def _merge(a: list[Any], b: list[Any]) -> list[Any]:
    lows = [v for v in (a[0], b[0]) if v is not None]
    highs = [v for v in (a[1], b[1]) if v is not None]
    nulls = None if a[2] is None or b[2] is None else a[2] + b[2]
    return [min(lows) if lows else None, max(highs) if highs else None, nulls]


def _usable(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return not math.isnan(value)
    return isinstance(value, _JSON_TYPES)
