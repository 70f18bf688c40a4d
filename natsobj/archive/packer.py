"""Small versions collected into one pack object, as AutoMQ's StreamSet objects do.

Thousands of small artifacts then cost one PUT per pack instead of one each; every version's
place in the pack is recorded (offset, length) so a restore reads it with one ranged GET.
"""

from __future__ import annotations

import time

from natsobj.archive.index import ArchiveRecord, pack_key

DEFAULT_SMALL_OBJECT = 1024 * 1024
DEFAULT_PACK_BYTES = 16 * 1024 * 1024
DEFAULT_PACK_AGE = 30.0


class Packer:
    """The pack being filled; ``take`` hands it over and starts the next."""

    def __init__(
        self, max_bytes: int = DEFAULT_PACK_BYTES, max_age: float = DEFAULT_PACK_AGE
    ) -> None:
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._buffer = bytearray()
        self._records: list[ArchiveRecord] = []
        self._started = 0.0
        self._key = ""

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: ArchiveRecord, data: bytes) -> None:
        """Place ``data`` in the pack. A pack is named by its first sequence, so a replay
        after a crash rewrites the same key rather than leaving an orphan."""
        if not self._records:
            self._started = time.monotonic()
            self._key = pack_key(record.sequence)
        record.key = self._key
        record.offset = len(self._buffer)
        record.length = len(data)
        self._buffer += data
        self._records.append(record)

    @property
    def full(self) -> bool:
        return len(self._buffer) >= self.max_bytes

    @property
    def stale(self) -> bool:
        return bool(self._records) and time.monotonic() - self._started >= self.max_age

    def take(self) -> tuple[str, bytes, list[ArchiveRecord]] | None:
        """(pack key, bytes, its records) or None when empty; the packer starts afresh."""
        if not self._records:
            return None
        records, key = self._records, self._key
        data = bytes(self._buffer)
        self._buffer = bytearray()
        self._records = []
        return key, data, records
