"""The reader refuses an object whose record has no digest unless the job sets the option
``allow_missing_digest`` (issue 21, point 9)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.security.test_missing_digest_faces import CONTENT, refusal, strip_digest


def _parquet() -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"n": [1, 2, 3]}), buffer)
    return buffer.getvalue()


def test_reader_refuses_a_record_without_digest_unless_the_option_allows(
    spark, options, store, raw
) -> None:
    store.put("raw/blob", CONTENT)
    store.put("foreign/part.parquet", _parquet())  # Parquet another tool wrote: no manifest
    strip_digest(raw, store.bucket, "raw/blob")
    strip_digest(raw, store.bucket, "foreign/part.parquet")
    reads = {
        "raw/blob": lambda opts: [
            r.content
            for r in spark.read.format("natsobj")
            .options(**opts)
            .option("layout", "binary")
            .load("raw")
            .collect()
        ],
        "foreign/part.parquet": lambda opts: [
            r.n for r in spark.read.format("natsobj").options(**opts).load("foreign").collect()
        ],
    }
    for name, read in reads.items():
        with pytest.raises(Exception, match=refusal(store.bucket, name)) as refused:
            read(options)
        # the hint in Spark's words: the option call, not a command-line flag (issue 29)
        assert '.option("allow_missing_digest", "true")' in str(refused.value)
        assert "--allow-missing-digest" not in str(refused.value)
    allowed = {**options, "allow_missing_digest": "true"}
    assert reads["raw/blob"](allowed) == [bytearray(CONTENT)]
    assert sorted(reads["foreign/part.parquet"](allowed)) == [1, 2, 3]
