"""Table-mode decoding: one landed Parquet, CSV or JSON-lines object as Arrow batches of the
query's exact schema. A file that does not fit fails the batch with its name, never silently
yields partial rows."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from natsobj.spark.arrowio import conform

BATCH_ROWS = 65_536
EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}


class UnreadableObject(ValueError):
    """A planned object that cannot be decoded with the query's schema."""


def object_format(name: str, configured: str) -> str:
    if configured != "auto":
        return configured
    for extension, fmt in EXTENSIONS.items():
        if name.lower().endswith(extension):
            return fmt
    raise UnreadableObject(
        f"object {name!r} has no known extension ({', '.join(EXTENSIONS)}); narrow the glob "
        'to the files you mean, or set .option("objectFormat", "parquet" | "csv" | "json")'
    )


def decode(
    source: pa.NativeFile | str, fmt: str, target: pa.Schema, *, name: str
) -> Iterator[pa.RecordBatch]:
    """Batches of ``target`` from one object's bytes (a buffer or a spooled file)."""
    try:
        for batch in _raw_batches(source, fmt, target):
            yield conform(batch, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, ValueError) as exc:
        raise UnreadableObject(
            f"object {name!r} ({fmt}) does not fit the stream's schema {target.names}: {exc}. "
            "Fix the schema, or overwrite or delete the object and restart the query (a batch "
            "skips objects replaced since it was planned)"
        ) from None


def _raw_batches(
    source: pa.NativeFile | str, fmt: str, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    if fmt == "parquet":
        parquet = pq.ParquetFile(source)
        missing = [n for n in target.names if n not in parquet.schema_arrow.names]
        if missing:
            raise KeyError(f"no column(s) {missing}; it has {parquet.schema_arrow.names}")
        yield from parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=target.names, use_threads=False
        )
    elif fmt == "csv":
        # empty fields are null, as with spark.read.csv
        convert = pacsv.ConvertOptions(
            column_types={f.name: f.type for f in target},
            include_columns=target.names,
            strings_can_be_null=True,
        )
        yield from pacsv.open_csv(source, convert_options=convert)
    else:
        table = pajson.read_json(source, parse_options=pajson.ParseOptions(explicit_schema=target))
        yield from table.to_batches(max_chunksize=BATCH_ROWS)
