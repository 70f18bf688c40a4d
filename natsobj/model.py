"""ObjectInfo, ObjectLink and StoreStatus, and their exact ADR-20 JSON form.

The JSON written here is what the Go, JavaScript and Python clients read; ``mtime`` is never
written (ADR-20) and is always filled from the server's message time when read back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from natsobj.errors import BadObjectMeta

DIGEST_PREFIX = "SHA-256="
TIERING_FIELD = "natsobj_tiering"
# An offloaded object's meta record links here, to a bucket that must never exist: official
# clients then fail with "object/bucket not found" instead of hanging on purged chunks.
OFFLOADED_LINK_BUCKET = "natsobj-offloaded-to-s3"
DEFAULT_CHUNK_SIZE = 128 * 1024


def format_digest(sha256_bytes: bytes) -> str:
    return DIGEST_PREFIX + base64.urlsafe_b64encode(sha256_bytes).decode("ascii")


def digest_of(data: bytes) -> str:
    return format_digest(hashlib.sha256(data).digest())


def digest_bytes(digest: str) -> bytes | None:
    """Decode a stored digest; tolerant of the standard-alphabet form some clients wrote."""
    if not digest or not digest.upper().startswith(DIGEST_PREFIX):
        return None
    value = digest[len(DIGEST_PREFIX) :]
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError):
        return None


def parse_server_time(value: str) -> datetime:
    """Parse the RFC 3339 nanosecond timestamps the server puts in Nats-Time-Stamp (Python
    3.11's fromisoformat reads them, keeping microseconds)."""
    parsed = datetime.fromisoformat(value.strip())
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_from_nanos(nanos: int) -> datetime:
    seconds, rest = divmod(nanos, 1_000_000_000)  # integer maths: floats lose microseconds
    return datetime.fromtimestamp(seconds, tz=UTC) + timedelta(microseconds=rest // 1000)


@dataclass(frozen=True)
class ObjectLink:
    """A link to another object (``name`` set) or to a whole bucket (``name`` empty)."""

    bucket: str
    name: str = ""

    @property
    def is_bucket_link(self) -> bool:
        return self.name == ""

    def to_json(self) -> dict[str, str]:
        out = {"bucket": self.bucket}
        if self.name:
            out["name"] = self.name
        return out


@dataclass
class Offload:
    """Where an offloaded version's bytes are: ``length`` bytes at ``offset`` of ``key`` in
    the archive at ``url`` (a pack or a version object, see docs/archive.md), and at the same
    key of each of ``mirrors`` (other targets of a replicated archive, tried in turn)."""

    url: str
    key: str
    offset: int
    length: int
    mirrors: list[str] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [self.url, *self.mirrors]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.mirrors:  # one target: the record stays as it always was
            del out["mirrors"]
        return out


@dataclass
class Tiering:
    """Set on the meta records that offload and rehydrate write. They stand for the version
    first recorded at meta sequence ``replaces`` (same bytes, name and metadata), so watches
    and ``changes`` that have seen that sequence skip them, and ``mtime`` stays the version's.
    Written as the extra top-level JSON field ``natsobj_tiering``, which other clients ignore."""

    replaces: int | None = None  # None once a later update_meta made it a version of its own
    mtime: datetime | None = None
    offload: Offload | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.replaces is not None:
            out["replaces"] = self.replaces
        if self.mtime is not None:
            out["mtime"] = self.mtime.isoformat()
        if self.offload is not None:
            out["offload"] = self.offload.to_json()
        return out

    def evolve_for_update(self) -> Tiering | None:
        """An update_meta makes a version of its own: the bytes stay where they are."""
        return Tiering(offload=self.offload) if self.offload is not None else None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Tiering:
        offload = doc.get("offload")
        replaces, mtime = doc.get("replaces"), doc.get("mtime")
        return cls(
            replaces=int(replaces) if replaces is not None else None,
            mtime=datetime.fromisoformat(mtime) if mtime else None,
            offload=Offload(**offload) if isinstance(offload, dict) else None,
        )


@dataclass
class ObjectInfo:
    """Everything ADR-20 records about an object, plus the server's mtime and meta sequence."""

    name: str
    bucket: str
    nuid: str = ""
    size: int = 0
    chunks: int = 0
    digest: str = ""
    deleted: bool = False
    description: str = ""
    headers: dict[str, list[str]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    link: ObjectLink | None = None
    chunk_size: int | None = None
    mtime: datetime | None = None
    sequence: int | None = None
    tiering: Tiering | None = None

    @property
    def is_link(self) -> bool:
        return self.link is not None

    @property
    def offloaded(self) -> bool:
        """The bytes are in the S3 archive, not in JetStream (natsobj.archive.tiering)."""
        return self.tiering is not None and self.tiering.offload is not None

    @property
    def stands_for(self) -> int | None:
        """The meta sequence of the version this record restates (written by an offload or a
        rehydrate, not a new version), or None for a record of its own."""
        return self.tiering.replaces if self.tiering is not None else None

    def to_json(self) -> dict[str, Any]:
        """The spec's JSON, field for field as the Go client marshals it (no mtime)."""
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.headers:
            out["headers"] = {k: list(v) for k, v in self.headers.items()}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        options: dict[str, Any] = {}
        if self.offloaded:  # what other clients see: a link they fail on cleanly
            options["link"] = {"bucket": OFFLOADED_LINK_BUCKET, "name": self.name}
        elif self.link is not None:
            options["link"] = self.link.to_json()
        if self.chunk_size:
            options["max_chunk_size"] = self.chunk_size
        if options:
            out["options"] = options
        out["bucket"] = self.bucket
        out["nuid"] = self.nuid
        out["size"] = self.size
        out["chunks"] = self.chunks
        if self.digest:
            out["digest"] = self.digest
        if self.deleted:
            out["deleted"] = True
        if self.tiering is not None:
            out[TIERING_FIELD] = self.tiering.to_json()
        return out

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_json(
        cls,
        data: bytes | str | dict[str, Any],
        *,
        mtime: datetime | None = None,
        sequence: int | None = None,
        bucket: str | None = None,
    ) -> ObjectInfo:
        """Parse a meta record written by any client; anything malformed is BadObjectMeta.

        Listings parse records by the hundred thousand, so the plain fields are read with one
        lookup each and the optional parts only when present."""
        try:
            doc = json.loads(data) if isinstance(data, bytes | str) else data
            if not isinstance(doc, dict) or not isinstance(name := doc.get("name"), str):
                raise ValueError("meta record has no string 'name'")
            get = doc.get
            link = chunk_size = tiering = None
            if options := get("options"):
                if not isinstance(options, dict):
                    raise ValueError("'options' is not an object")
                link_doc = options.get("link")
                if isinstance(link_doc, dict) and link_doc.get("bucket"):
                    link = ObjectLink(
                        bucket=str(link_doc["bucket"]), name=str(link_doc.get("name") or "")
                    )
                if max_chunk_size := options.get("max_chunk_size"):
                    chunk_size = int(max_chunk_size)
            if isinstance(tiering_doc := get(TIERING_FIELD), dict):
                tiering = Tiering.from_json(tiering_doc)
                if tiering.offload is not None:
                    link = None  # the placeholder for other clients, not a link of the user's
                if tiering.mtime:
                    mtime = tiering.mtime
            headers, metadata = get("headers"), get("metadata")
            return cls(
                name,
                str(get("bucket") or bucket or ""),
                str(get("nuid") or ""),
                int(get("size") or 0),
                int(get("chunks") or 0),
                str(get("digest") or ""),
                bool(get("deleted", False)),
                str(get("description") or ""),
                _parse_headers(headers) if headers else {},
                _parse_metadata(metadata) if metadata else {},
                link,
                chunk_size,
                mtime,
                sequence,
                tiering,
            )
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise BadObjectMeta(f"cannot parse object meta: {exc}", bucket=bucket) from exc

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with mtime and sequence, for XCom, run tags and CLI output."""
        out = self.to_json()
        out["mtime"] = self.mtime.isoformat() if self.mtime else None
        out["sequence"] = self.sequence
        out["deleted"] = self.deleted
        out.setdefault("digest", "")
        return out

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ObjectInfo:
        mtime = doc.get("mtime")
        return cls.from_json(
            doc,
            mtime=datetime.fromisoformat(mtime) if isinstance(mtime, str) else mtime,
            sequence=doc.get("sequence"),
        )

    def evolve(self, **changes: Any) -> ObjectInfo:
        return replace(self, **changes)


def _parse_headers(raw: Any) -> dict[str, list[str]]:
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError("'headers' is not an object")
    return {
        str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in raw.items()
    }


def _parse_metadata(raw: Any) -> dict[str, str]:
    # The ADR's example shows a list of single-entry maps; every client writes a map.
    if not raw:
        return {}
    if isinstance(raw, list):
        merged: dict[str, str] = {}
        for entry in raw:
            merged.update({str(k): str(v) for k, v in dict(entry).items()})
        return merged
    if not isinstance(raw, dict):
        raise ValueError("'metadata' is not an object")
    return {str(k): str(v) for k, v in raw.items()}


@dataclass
class StoreStatus:
    """ADR-20's ObjectStoreStatus, read from the backing stream's info."""

    bucket: str
    description: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    ttl: timedelta | None = None
    storage: str = "file"
    replicas: int = 1
    sealed: bool = False
    size: int = 0
    max_bytes: int = -1
    is_compressed: bool = False
    backing_store: str = "JetStream"
    placement: dict[str, Any] | None = None
    messages: int = 0
    last_sequence: int = 0  # the stream's last sequence: where a change cursor starts "now"
    # objects (and their bytes) offloaded to S3; None unless status(count_offloaded=True)
    offloaded_objects: int | None = None
    offloaded_bytes: int | None = None
    stream_info: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_stream_info(cls, bucket: str, info: dict[str, Any]) -> StoreStatus:
        config = info.get("config", {})
        state = info.get("state", {})
        max_age = int(config.get("max_age") or 0)
        return cls(
            bucket=bucket,
            description=config.get("description", "") or "",
            metadata={
                k: v for k, v in (config.get("metadata") or {}).items() if not k.startswith("_nats")
            },
            ttl=timedelta(microseconds=max_age / 1000) if max_age else None,
            storage=config.get("storage", "file"),
            replicas=int(config.get("num_replicas") or 1),
            sealed=bool(config.get("sealed", False)),
            size=int(state.get("bytes") or 0),
            max_bytes=int(config.get("max_bytes", -1)),
            is_compressed=config.get("compression", "none") == "s2",
            placement=config.get("placement"),
            messages=int(state.get("messages") or 0),
            last_sequence=int(state.get("last_seq") or 0),
            stream_info=info,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "description": self.description,
            "metadata": self.metadata,
            "ttl_seconds": self.ttl.total_seconds() if self.ttl else None,
            "storage": self.storage,
            "replicas": self.replicas,
            "sealed": self.sealed,
            "size": self.size,
            "max_bytes": self.max_bytes,
            "is_compressed": self.is_compressed,
            "backing_store": self.backing_store,
            "messages": self.messages,
            "offloaded_objects": self.offloaded_objects,
            "offloaded_bytes": self.offloaded_bytes,
        }
