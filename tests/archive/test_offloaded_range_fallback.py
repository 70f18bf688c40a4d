"""An archive registration without ``read_range`` (natsobj.aio.offloaded): ranged reads of
offloaded objects fall back to the whole-object reader, dropping what comes before the range
and stopping at its end, and return exactly the bytes asked for."""

from __future__ import annotations

import os

from natsobj.aio.offloaded import register_offloaded_reader
from natsobj.archive import readthrough
from tests.archive.test_tiering import archive_and_offload, run


def test_without_a_ranged_reader_the_whole_reader_serves_ranges(nats_url, store, archive_url):
    data = os.urandom(600_003)
    store.put("f.bin", data, chunk_size=64 * 1024)
    result = run(archive_and_offload(nats_url, store.bucket, archive_url))
    assert "f.bin" in {info.name for info in result.offloaded}
    register_offloaded_reader(readthrough.offloaded_bytes)  # as a plugin without ranges
    try:
        for start, end in [(0, 1), (70_000, 300_000), (-10, None), (599_999, 700_000), (5, 5)]:
            assert store.get_range("f.bin", start, end) == data[start:end]
        with store.open_range("f.bin") as reader:
            reader.seek(-100_000, 2)
            assert reader.read(50) == data[-100_000:-99_950]
            assert reader.bytes_fetched == 50
    finally:
        register_offloaded_reader(
            readthrough.offloaded_bytes, read_range=readthrough.offloaded_range
        )
