"""Table decoding, shared by batch reads and the streaming source: one Parquet, CSV, JSON or
text object as Arrow batches of the query's exact schema, in bounded memory (CSV is streamed
by pyarrow, JSON Lines and text are cut into blocks of whole lines). A file that does not fit
fails the read with its name, never silently yields partial rows.

The options are those of Spark's own CSV, JSON and text sources (``file_options``); a CSV with
a header is matched to the schema by column name, one without by position, as Spark does.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from natsobj.spark.arrowio import conform
from natsobj.spark.file_options import (
    CSV,
    EXTENSIONS,
    JSON,
    PARQUET,
    TEXT,
    FileFormat,
    format_of,
    split_compression,
)

BATCH_ROWS = 65_536
# JSON Lines and text are decoded this many bytes (whole lines) at a time.
BLOCK_BYTES = 16 * 1024 * 1024
TRUE_VALUES = ["true", "True", "TRUE"]
FALSE_VALUES = ["false", "False", "FALSE"]


class UnreadableObject(ValueError):
    """A planned object that cannot be decoded with the query's schema."""


def object_format(name: str, configured: str) -> str:
    """The format to decode ``name`` with; an unknown extension under ``auto`` says what to do."""
    fmt = format_of(name, configured)
    if fmt is None:
        raise UnreadableObject(
            f"object {name!r} has no known extension ({', '.join(EXTENSIONS)}); narrow the glob "
            'to the files you mean, or set .option("objectFormat", "parquet" | "csv" | "json" '
            '| "text")'
        )
    return fmt


def decode(
    source: pa.NativeFile | str,
    fmt: str,
    target: pa.Schema,
    *,
    name: str,
    options: FileFormat,
) -> Iterator[pa.RecordBatch]:
    """Batches of ``target`` from one object's bytes (a buffer or a spooled file)."""
    try:
        for batch in raw_batches(source, fmt, target, name=name, options=options):
            yield conform(batch, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, ValueError) as exc:
        if isinstance(exc, UnreadableObject):
            raise
        raise UnreadableObject(
            f"object {name!r} ({fmt}) does not fit the read schema {target.names}: {exc}. "
            "Fix the schema (.schema(...)) or the object; a streaming query skips objects "
            "replaced since it was planned, so overwrite or delete it and restart the query"
        ) from None


def opened(source: pa.NativeFile | str, name: str, options: FileFormat) -> pa.NativeFile:
    """The object's bytes as a stream: decompressed when its extension names a codec
    (``.gz``, ``.bz2``, ``.zst``), and transcoded to UTF-8 from option ``encoding``."""
    _, codec = split_compression(name)
    stream = pa.input_stream(source, compression=codec) if isinstance(source, str) else source
    if codec is not None and not isinstance(source, str):
        stream = pa.CompressedInputStream(source, codec)
    if codecs.lookup(options.encoding).name != "utf-8":
        stream = pa.transcoding_input_stream(stream, options.encoding, "utf-8")
    return stream


def raw_batches(
    source: pa.NativeFile | str,
    fmt: str,
    target: pa.Schema,
    *,
    name: str,
    options: FileFormat,
) -> Iterator[pa.RecordBatch]:
    if fmt == PARQUET:
        parquet = pq.ParquetFile(source)
        missing = [n for n in target.names if n not in parquet.schema_arrow.names]
        if missing:
            raise KeyError(f"no column(s) {missing}; it has {parquet.schema_arrow.names}")
        yield from parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=target.names, use_threads=False
        )
    elif fmt == CSV:
        yield from _csv(csv_stream(opened(source, name, options), options), target, options)
    elif fmt == JSON:
        yield from _json(opened(source, name, options), target, options)
    elif fmt == TEXT:
        for values in text_values(opened(source, name, options), options):
            yield pa.RecordBatch.from_arrays([pa.array(values, pa.string())], names=target.names)
    else:
        raise UnreadableObject(f"object {name!r}: unknown format {fmt!r}")


def csv_options(
    options: FileFormat, names: list[str] | None = None
) -> tuple[pacsv.ReadOptions, pacsv.ParseOptions]:
    """pyarrow's reading and parsing options for Spark's CSV options. ``names`` are the
    columns of a file without a header, by position."""
    read = pacsv.ReadOptions(
        column_names=None if options.header else names,
        autogenerate_column_names=not options.header and names is None,
        use_threads=False,
    )
    parse = pacsv.ParseOptions(
        delimiter=options.sep,
        quote_char=options.quote,
        escape_char=options.escape,
        double_quote=True,
        newlines_in_values=options.multi_line,
        invalid_row_handler=None,
    )
    return read, parse


def null_values(options: FileFormat) -> list[str]:
    """What a CSV field reads as null: option nullValue, and an empty unquoted field always
    (Spark's parser gives null for it whatever nullValue is; a quoted empty field is "")."""
    return sorted({options.null_value, ""})


def _csv(stream: pa.NativeFile, target: pa.Schema, options: FileFormat) -> Iterator[pa.RecordBatch]:
    read, parse = csv_options(options, target.names)
    convert = pacsv.ConvertOptions(
        column_types={f.name: f.type for f in target},
        include_columns=target.names,
        null_values=null_values(options),
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
        true_values=TRUE_VALUES,
        false_values=FALSE_VALUES,
    )
    yield from pacsv.open_csv(
        stream, read_options=read, parse_options=parse, convert_options=convert
    )


def csv_stream(stream: pa.NativeFile, options: FileFormat) -> pa.NativeFile:
    """A CSV object's stream without the lines starting with option ``comment`` (pyarrow has
    no such option; with one, the object is filtered in memory, as it is fetched anyway)."""
    if not options.comment:
        return stream
    marker = options.comment.encode()
    kept = b"".join(line + b"\n" for line in _lines(stream, options) if not line.startswith(marker))
    return pa.BufferReader(kept)


def _json(
    stream: pa.NativeFile, target: pa.Schema, options: FileFormat
) -> Iterator[pa.RecordBatch]:
    if options.multi_line:
        # One JSON document per object (a record, or an array of records), as Spark's
        # multiLine: the object is parsed whole, as Spark's task does.
        doc = json.loads(stream.read())
        records = doc if isinstance(doc, list) else [doc]
        table = pa.Table.from_pylist(records, schema=_loose(target))
        yield from table.to_batches(max_chunksize=BATCH_ROWS)
        return
    parse = pajson.ParseOptions(explicit_schema=_loose(target), unexpected_field_behavior="ignore")
    for block in _line_blocks(stream, options):
        table = pajson.read_json(pa.BufferReader(block), parse_options=parse)
        yield from table.to_batches(max_chunksize=BATCH_ROWS)


def _loose(target: pa.Schema) -> pa.Schema:
    """``target`` with every field nullable: a missing key is null, and ``conform`` then
    refuses the null where the read schema does not allow one."""
    return pa.schema([f.with_nullable(True) for f in target])


def text_values(stream: pa.NativeFile, options: FileFormat) -> Iterator[list[str]]:
    """Blocks of lines (Spark's text source: \\n, \\r\\n or \\r unless option lineSep), or
    the whole object as one value with option wholetext."""
    if options.wholetext:
        yield [stream.read().decode("utf-8")]
        return
    values: list[str] = []
    for line in _lines(stream, options):
        values.append(line.decode("utf-8"))
        if len(values) >= BATCH_ROWS:
            yield values
            values = []
    if values:
        yield values


def _lines(stream: pa.NativeFile, options: FileFormat) -> Iterator[bytes]:
    """The lines of ``stream`` without their separators, a block at a time; a final
    separator ends the last line, it does not start an empty one."""
    for block in _line_blocks(stream, options):
        if options.line_sep:
            sep = options.line_sep.encode()
            yield from block.removesuffix(sep).split(sep)
        else:
            yield from block.splitlines()


def _line_blocks(stream: pa.NativeFile, options: FileFormat) -> Iterator[bytes]:
    """About ``BLOCK_BYTES`` at a time, cut after a line separator, so no line is split."""
    sep = options.line_sep.encode() if options.line_sep else b"\n"
    rest = b""
    while True:
        data = stream.read(BLOCK_BYTES)
        if not data:
            break
        data = rest + data
        cut = data.rfind(sep)
        if cut < 0:
            rest = data
            continue
        cut += len(sep)
        rest = data[cut:]
        yield data[:cut]
    if rest:
        yield rest + (b"" if options.line_sep else b"\n")
