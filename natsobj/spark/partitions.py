"""Hive-style partitioned datasets, as Spark's Parquet source writes and discovers them.

A partitioned dataset keeps each partition's rows under ``<prefix>/<col>=<value>/...``, with
the partition columns left out of the Parquet objects. The rules here are Spark's own
(``ExternalCatalogUtils`` and ``PartitioningUtils``), so a folder written by Spark, pyarrow or
natsobj reads the same everywhere:

- folder names and the types discovery gives them are ``partition_values``;
- the partition columns come after the data columns in the schema.

Spark's Python data source API does not hand ``.partitionBy(...)`` to the source (see
docs/spark.md, "Partitioned datasets"), so the write takes the columns from the option
``partitionBy``.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from natsobj.spark.errors import BadSparkOption, SchemaMismatch
from natsobj.spark.partition_values import (
    directory,
    infer_type,
    path_values,
    typed,
    wider,
)

if TYPE_CHECKING:
    from natsobj.spark.manifest import Manifest
    from natsobj.spark.pushdown import Condition

OPTION = "partitionby"

# Column types a write can partition by: their string form is the same in Arrow as in Spark's
# cast to string. Floating point and timestamps are not (Java prints 1.0E10 and the session
# time zone), so a write refuses them rather than write names Spark would read differently.
WRITABLE_TYPES = ("string", "byte", "short", "integer", "long", "boolean", "date")

# -- the layout of one dataset --------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The partition columns of a dataset and their Spark types (JSON type names)."""

    columns: tuple[str, ...] = ()
    types: tuple[Any, ...] = ()

    def fields(self) -> list[dict[str, Any]]:
        """The partition columns as Spark schema fields (``StructField.jsonValue``)."""
        return [
            {"name": c, "type": t, "nullable": True, "metadata": {}}
            for c, t in zip(self.columns, self.types, strict=True)
        ]

    def values(self, prefix: str, name: str, schema: Mapping[str, Any]) -> tuple[Any, ...]:
        """The typed partition values of object ``name``, by the read ``schema``'s types
        (``StructType.jsonValue``) where it has the column, else the discovered ones."""
        found = dict(path_values(prefix, name))
        given = {f["name"]: f["type"] for f in schema.get("fields", [])}
        return tuple(
            typed(found.get(c), given.get(c, t))
            for c, t in zip(self.columns, self.types, strict=True)
        )


UNPARTITIONED = Layout()


def discover(prefix: str, names: Iterable[str], *, where: str) -> Layout:
    """The partition columns of objects listed under ``prefix`` (a folder of foreign Parquet):
    every object must sit under the same column names, as Spark requires."""
    layouts: dict[tuple[str, ...], str] = {}
    types: dict[str, str] = {}
    for name in names:
        pairs = path_values(prefix, name)
        layouts.setdefault(tuple(c for c, _ in pairs), name)
        for column, raw in pairs:
            types[column] = wider(types.get(column, "null"), infer_type(raw))
    if len(layouts) > 1:
        listed = "; ".join(f"{list(k) or 'none'} (e.g. {v!r})" for k, v in layouts.items())
        raise BadSparkOption(
            f"conflicting partition folders under {where}: {listed}",
            hint="Data objects must all sit under the same col=value folders, as Spark requires.",
        )
    (columns,) = layouts or [()]
    return Layout(columns, tuple("string" if types[c] == "null" else types[c] for c in columns))


# -- writing --------------------------------------------------------------------------------------


def requested(options: Mapping[str, str], bucket: str) -> tuple[str, ...]:
    """The option ``partitionBy``: column names separated by commas."""
    names = tuple(n.strip() for n in (options.get(OPTION) or "").split(",") if n.strip())
    repeated = sorted({n for n in names if [m.lower() for m in names].count(n.lower()) > 1})
    if repeated:
        raise BadSparkOption(f"option partitionBy names {repeated} twice", bucket=bucket)
    return names


def resolve(
    requested_columns: Sequence[str],
    schema: Mapping[str, Any],
    previous: Sequence[str] | None,
    *,
    overwrite: bool,
    where: str,
) -> tuple[str, ...]:
    """The partition columns a write uses: those asked for, by the DataFrame's spelling
    (Spark resolves them case-insensitively), or on append the dataset's own. An append
    must keep the dataset's partitioning."""
    fields = {f["name"].lower(): f for f in schema.get("fields", [])}
    columns = []
    for name in requested_columns:
        field = fields.get(name.lower())
        if field is None:
            raise BadSparkOption(
                f"partition column {name!r} is not in the DataFrame "
                f"(it has {[f['name'] for f in schema.get('fields', [])]})",
                hint='Name existing columns: .option("partitionBy", "region,day").',
            )
        if field["type"] not in WRITABLE_TYPES:
            raise BadSparkOption(
                f"partition column {field['name']!r} is {field['type']!r}; natsobj partitions "
                f"by {', '.join(WRITABLE_TYPES)} columns",
                hint="Cast it first, e.g. to_date(ts) or date_format(ts, 'yyyy-MM-dd-HH').",
            )
        columns.append(field["name"])
    if columns and len(columns) == len(fields):
        raise BadSparkOption(
            "cannot partition by every column: the objects would have none left",
            hint="Leave at least one column out of option partitionBy.",
        )
    if previous is None or overwrite:
        return tuple(columns)
    if not requested_columns:
        return tuple(previous)
    if tuple(columns) != tuple(previous):
        raise SchemaMismatch(
            f"cannot append to {where}: the dataset is partitioned by {list(previous)}, "
            f"the write by {columns}"
        )
    return tuple(columns)


def stored_schema(schema: Mapping[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """The dataset's schema: data columns first, then the partition columns, as Spark's
    Parquet source reads a partitioned folder."""
    fields = list(schema.get("fields", []))
    by_name = {f["name"]: f for f in fields}
    data = [f for f in fields if f["name"] not in columns]
    return {**schema, "fields": [*data, *(by_name[c] for c in columns)]}


def texts(column: pa.Array) -> pa.Array:
    """One partition column's values as Spark writes them into names (null and empty:
    None), for the types in ``WRITABLE_TYPES``."""
    if pa.types.is_boolean(column.type):
        text = pc.if_else(column, "true", "false")
    else:
        text = pc.cast(column, pa.string())
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)


def split(batch: pa.RecordBatch, columns: Sequence[str]) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows of ``batch`` by partition: each partition's folder and its rows without the
    partition columns. Escaping runs once per distinct value, not per row."""
    segments = []
    for column in columns:
        encoded = pc.dictionary_encode(texts(batch.column(column)))
        folders = pa.array(
            [directory([column], [t]) for t in [*encoded.dictionary.to_pylist(), None]]
        )
        indices = pc.fill_null(encoded.indices, len(encoded.dictionary))
        segments.append(pc.take(folders, indices))
    paths = pc.binary_join_element_wise(*segments, "/")
    keys = pc.dictionary_encode(paths)
    order = np.argsort(keys.indices.to_numpy(zero_copy_only=False), kind="stable")
    data = batch.select([n for n in batch.schema.names if n not in columns]).take(order)
    sorted_keys = keys.indices.to_numpy(zero_copy_only=False)[order]
    starts = [0, *(np.flatnonzero(np.diff(sorted_keys)) + 1).tolist(), len(order)]
    for start, end in itertools.pairwise(starts):
        if end > start:
            yield keys.dictionary[int(sorted_keys[start])].as_py(), data.slice(start, end - start)


# -- reading --------------------------------------------------------------------------------------


def dataset_layout(
    prefix: str, names: Iterable[str], *, manifest: Manifest | None, where: str
) -> Layout:
    """The partitioning a read plans with: the manifest's (its columns are the last fields of
    its schema), or, for foreign Parquet, what the listed names show."""
    if manifest is None:
        return discover(prefix, names, where=where)
    types = {f["name"]: f["type"] for f in manifest.schema.get("fields", [])}
    columns = manifest.partition_columns
    return Layout(columns, tuple(types[c] for c in columns))


def with_partitions(data: Mapping[str, Any], layout: Layout) -> dict[str, Any]:
    """Spark's ``mergeDataAndPartitionSchema``: the data schema (``StructType.jsonValue``)
    with the partition columns after it; a data column of the same name keeps its place and
    takes the partition type."""
    partition = {f["name"]: f for f in layout.fields()}
    fields = [partition.pop(f["name"], f) for f in data.get("fields", [])]
    return {**data, "fields": [*fields, *partition.values()]}


def may_hold(layout: Layout, values: Sequence[Any], where: Sequence[Condition]) -> bool:
    """False only when a part's partition values prove no row satisfies all of ``where``:
    the pushed filters decided on the folder, so other partitions' parts are not read.
    Spark applies every filter to the rows anyway; what cannot be decided here is kept."""
    fixed = dict(zip(layout.columns, values, strict=True))
    return all(_holds(fixed[c.column], c) for c in where if c.column in fixed)


def _holds(value: Any, cond: Condition) -> bool:
    if cond.op in ("null", "notnull"):
        return (value is None) == (cond.op == "null")
    if value is None:
        return False  # a comparison with null is never true
    if any(isinstance(v, (dt.datetime, float)) for v in (value, *cond.values)):
        return True  # zones and NaN: Spark's answer may differ from Python's
    try:
        if cond.op == "in":
            return value in cond.values
        other = cond.values[0]
        return {
            "eq": value == other,
            "gt": value > other,
            "ge": value >= other,
            "lt": value < other,
            "le": value <= other,
        }[cond.op]
    except (TypeError, KeyError):
        return True


def add_constants(
    batch: pa.RecordBatch, fixed: Mapping[str, Any], target: pa.Schema
) -> pa.RecordBatch:
    """``batch`` with the partition columns of ``fixed`` (column -> value) added, in the
    order of ``target``."""
    if not fixed:
        return batch
    columns = [
        pa.repeat(pa.scalar(fixed[f.name], f.type), batch.num_rows)
        if f.name in fixed
        else batch.column(f.name)
        for f in target
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)
