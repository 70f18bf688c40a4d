"""Ranged reads of offloaded objects: each range is one S3 range GET of exactly its bytes at
the object's place in the archive (a version object of its own, or a pack), not a read of the
object from its start. Against moto's S3 server and a nats-server."""

from __future__ import annotations

import os

import fsspec

from natsobj.archive import ArchiveTarget
from natsobj.archive.readthrough import trust
from tests.archive.test_tiering import archive_and_offload, run

RANGES = [(0, 1), (5, 5000), (-100, None), (1_000_000, 1_000_017), (-3, -1), (0, None)]


class SpiedTarget(ArchiveTarget):
    """The reader's target for the archive URL, recording the reads sent through it."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.ranged: list[tuple[str, int, int]] = []
        self.streamed: list[tuple[str, int, int]] = []

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        self.ranged.append((key, start, end))
        return await super().get_range(key, start, end)

    async def stream(self, key: str, start: int, end: int):
        self.streamed.append((key, start, end))
        async for piece in super().stream(key, start, end):
            yield piece


def test_a_range_of_an_offloaded_object_is_one_ranged_get(nats_url, store, archive_url):
    big = os.urandom(2 * 1024 * 1024 + 11)  # a version object of its own
    small = os.urandom(7000)  # packed with others: its range is inside the pack's
    store.put("data/big.bin", big)
    store.put("data/small.bin", small)
    store.put("data/other.bin", os.urandom(5000))
    result = run(archive_and_offload(nats_url, store.bucket, archive_url))
    assert {i.name for i in result.offloaded} >= {"data/big.bin", "data/small.bin"}

    target = SpiedTarget(archive_url)
    trust(target)  # this process's target for that URL: the reads go through it
    for name, data in (("data/big.bin", big), ("data/small.bin", small)):
        offload = store.get_info(name).tiering.offload
        for start, end in RANGES:
            del target.ranged[:]
            assert store.get_range(name, start, end) == data[start:end], (name, start, end)
            first, stop, _ = slice(start, end).indices(len(data))
            at = offload.offset
            expected = [(offload.key, at + first, at + stop)] if stop > first else []
            assert target.ranged == expected, (name, start, end)
    assert target.streamed == []  # never the object from its start

    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    path = f"{store.bucket}/data/big.bin"
    assert fs.cat_file(path, 1_500_000, 1_500_100) == big[1_500_000:1_500_100]
    with fs.open(f"{store.bucket}/data/small.bin", "rb") as f:
        f.seek(6000)
        assert f.read(50) == small[6000:6050]
    assert target.streamed == []
