"""The decoder cuts JSON Lines and text into blocks of whole lines (bounded memory): a line or
a \\r\\n that straddles a block boundary must come out as if the object were read whole."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from natsobj.spark import decode
from natsobj.spark.file_options import JSON, TEXT, FileFormat

TEXT_BYTES = b"alpha\r\nbeta\n\ngamma delta\repsilon\r\n\r\nzeta"


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64])
def test_text_lines_survive_any_block_size(monkeypatch, block) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    target = pa.schema([pa.field("value", pa.string())])
    batches = decode.decode(
        pa.BufferReader(TEXT_BYTES), TEXT, target, name="t.txt", options=FileFormat()
    )
    values = [v for b in batches for v in b.column(0).to_pylist()]
    assert values == TEXT_BYTES.decode().splitlines()


@pytest.mark.parametrize("block", [1, 4, 9, 1024])
def test_json_lines_survive_any_block_size(monkeypatch, block) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    records = [{"a": i, "s": "x" * i} for i in range(12)]
    data = b"\n".join(json.dumps(r).encode() for r in records)  # no final newline
    target = pa.schema([pa.field("a", pa.int64()), pa.field("s", pa.string())])
    batches = decode.decode(
        pa.BufferReader(data), JSON, target, name="j.json", options=FileFormat()
    )
    assert [row for b in batches for row in b.to_pylist()] == records


def test_a_custom_line_separator_splits_text(monkeypatch) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 3)
    target = pa.schema([pa.field("value", pa.string())])
    options = FileFormat(line_sep="||")
    batches = decode.decode(
        pa.BufferReader(b"a||bb||||c||"), TEXT, target, name="t", options=options
    )
    assert [v for b in batches for v in b.column(0).to_pylist()] == ["a", "bb", "", "c"]
