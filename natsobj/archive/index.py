"""The archive's layout and its index: one Parquet segment per flush, readable anywhere.

Layout under ``s3://bucket/prefix`` (sequences zero-padded to 20 digits so keys sort):

- ``versions/<seq>``              the bytes of one large version (multipart upload)
- ``packs/<first>.pack``          small versions' bytes back to back, named by the first
- ``index/<first>-<last>.parquet`` one row per meta record in that sequence range
- ``cursor.json``                 the last sequence indexed, written after each segment

A segment covers every meta-stream sequence from just after the previous segment to its
``last``, so the index itself is the durable cursor: a crash before ``cursor.json`` is
written loses nothing, and a replay starts after the highest segment and duplicates nothing.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from natsobj.archive.target import ArchiveTarget

INDEX_DIR = "index/"
CURSOR_KEY = "cursor.json"
SEQ_DIGITS = 20

# kinds of record
PUT = "put"  # new bytes
META = "meta"  # update_meta: same bytes (same nuid), new name/headers/metadata/description
DELETE = "delete"  # the tombstone
# the server deleted the object when its time to live ran out (ADR-43's delete marker): not
# a user's delete, so the archive keeps the last version as current (docs/archive.md)
EXPIRED = "expired"
LINK = "link"  # an object or bucket link: a meta record only
SKIPPED = "skipped"  # the meta record was seen but its bytes were gone from NATS
# a version removed for good from a bucket keeping versions (``nuid``: its id): a restore of
# a time after it leaves the version out; its bytes stay archived
REMOVED = "removed"


def seq_text(sequence: int) -> str:
    return f"{sequence:0{SEQ_DIGITS}d}"


def version_key(sequence: int) -> str:
    return f"versions/{seq_text(sequence)}"


def pack_key(first: int) -> str:
    return f"packs/{seq_text(first)}.pack"


def segment_key(first: int, last: int) -> str:
    return f"{INDEX_DIR}{seq_text(first)}-{seq_text(last)}.parquet"


def segment_range(key: str) -> tuple[int, int]:
    first, last = key.rsplit("/", 1)[-1].removesuffix(".parquet").split("-")
    return int(first), int(last)


@dataclass
class ArchiveRecord:
    """One archived meta record: where its bytes are and everything ADR-20 said about it."""

    sequence: int
    bucket: str
    name: str
    kind: str
    mtime: datetime
    size: int = 0
    digest: str = ""
    nuid: str = ""
    chunks: int = 0
    description: str = ""
    headers: str = "{}"  # JSON: {"Key": ["v1", "v2"]}
    metadata: str = "{}"  # JSON: {"key": "value"}
    link: str = ""  # JSON of the ADR-20 link, for kind == "link"
    previous_name: str = ""  # a rename: the name this version's bytes had before
    key: str = ""  # versions/... or packs/...; empty when there are no bytes
    offset: int = 0
    length: int = 0
    archived_at: datetime | None = None
    # the URLs of the targets holding the bytes, space separated (several targets,
    # natsobj.archive.targets); empty in a one-target archive: the target holding the index
    targets: str = ""

    @property
    def header_map(self) -> dict[str, list[str]]:
        return json.loads(self.headers or "{}")

    @property
    def metadata_map(self) -> dict[str, str]:
        return json.loads(self.metadata or "{}")


def _schema() -> Any:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    types = {
        "sequence": pa.int64(),
        "size": pa.int64(),
        "chunks": pa.int64(),
        "offset": pa.int64(),
        "length": pa.int64(),
        "mtime": ts,
        "archived_at": ts,
    }
    return pa.schema([(f.name, types.get(f.name, pa.string())) for f in fields(ArchiveRecord)])


def encode_segment(records: list[ArchiveRecord]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([asdict(r) for r in records], schema=_schema())
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def decode_segment(data: bytes) -> list[ArchiveRecord]:
    import pyarrow.parquet as pq

    rows = pq.read_table(io.BytesIO(data)).to_pylist()
    return [ArchiveRecord(**row) for row in rows]


async def segment_keys(target: ArchiveTarget) -> list[str]:
    return [k for k in await target.list(INDEX_DIR) if k.endswith(".parquet")]
