"""ObjectInfo, ObjectLink and StoreStatus, and their exact ADR-20 JSON form.

The JSON written here is what the Go, JavaScript and Python clients read; ``mtime`` is never
written (ADR-20) and is always filled from the server's message time when read back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from natsobj.errors import BadChunkSize, BadObjectMeta
from natsobj.names import is_bucket_name, is_token_of
from natsobj.record_fields import (
    MAX_COUNT,
    MAX_NUID,
    InvalidField,
    count_field,
    flag_field,
    headers_field,
    metadata_field,
    name_field,
    nuid_field,
    shown_value,
    text_field,
    time_field,
    token_name,
)

DIGEST_PREFIX = "SHA-256="
TIERING_FIELD = "natsobj_tiering"
# An object header of a versioned delete's tombstone: a delete marker, a version of its own,
# rather than the plain tombstone ADR-20 clients leave (which is no version)
DELETE_MARKER_HEADER = "Natsobj-Delete-Marker"
# An offloaded object's meta record links here, to a bucket that must never exist: official
# clients then fail with "object/bucket not found" instead of hanging on purged chunks. The
# name is in records already written, so it stays as it is.
OFFLOADED_LINK_BUCKET = "natsobj-offloaded-to-s3"
DEFAULT_CHUNK_SIZE = 128 * 1024
# Each chunk is a message with its own subject and headers (about a hundred bytes): below this
# they cost more than a fifth of the bytes they carry, and a chunk size of 1 a hundred times.
MIN_CHUNK_SIZE = 512
# The largest max_payload NATS advises: no sane record asks for chunks beyond it.
MAX_KEPT_CHUNK_SIZE = 8 * 1024 * 1024
# The most a meta record may take. Parsed, a record costs many times its size (a map of short
# strings twenty times), and listings parse them by the batch: one record above this is
# refused before it is parsed. A name, a link, a digest and metadata the size object stores
# allow leave it far from the bound; natsobj never writes a record above it.
MAX_RECORD_BYTES = 64 * 1024


def check_chunk_size(chunk_size: int, *, bucket: str | None = None, name: str | None = None) -> int:
    """The one rule every face's chunk size option goes through: a positive integer of at
    least ``MIN_CHUNK_SIZE`` (the server's max_payload bounds it from above, at put time)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise BadChunkSize(
            f"the chunk size must be a whole number of bytes, not {chunk_size!r}",
            bucket=bucket,
            name=name,
        )
    if chunk_size < MIN_CHUNK_SIZE:
        raise BadChunkSize(
            f"a chunk size of {chunk_size} bytes is below the least a put takes"
            f" ({MIN_CHUNK_SIZE} bytes): every chunk is a message of its own",
            bucket=bucket,
            name=name,
        )
    return chunk_size


def kept_chunk_size(recorded: int | None) -> int | None:
    """The chunk size a copy, restamp or rehydrate keeps from the record it rewrites: the
    record's when it is sane, else None (the put's default). A record is anyone's to write,
    and a chunk size of 1 would turn a 64 KiB copy into 65,536 messages."""
    if recorded is not None and MIN_CHUNK_SIZE <= recorded <= MAX_KEPT_CHUNK_SIZE:
        return recorded
    return None


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
    """Where the bytes of a version that lives outside its bucket are: ``length`` bytes at
    ``offset`` of ``key`` in the store at ``url``, and at the same key of each of ``mirrors``
    (copies, tried in turn). The core keeps and checks the location; what the URL names and
    how it is read belong to the reader registered with ``natsobj.aio.offloaded``."""

    url: str
    key: str
    offset: int
    length: int
    mirrors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.mirrors:  # one target: the record stays as it always was
            del out["mirrors"]
        return out


@dataclass
class Tiering:
    """Set on the meta records that offload and rehydrate write. They stand for the version
    first recorded at meta sequence ``replaces`` (same bytes, name and metadata), which they
    keep in the stream (they are published without a rollup) so a reader can prove it: only
    a restatement ``ObjectInfo.restates`` that version is one (watches and ``changes`` skip
    it, and its ``mtime`` is the server's time of that version); anything else claiming to be
    one is a new version like any other (``natsobj.aio.restate_proof``). ``mtime`` is written
    for earlier natsobj releases and never read. Written as the extra top-level JSON field
    ``natsobj_tiering``, which other clients ignore."""

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
        replaces, mtime = doc.get("replaces"), doc.get("mtime")
        if replaces is not None:
            replaces = count_field(replaces, f"{TIERING_FIELD}.replaces")
        return cls(
            replaces=replaces,
            mtime=time_field(mtime, f"{TIERING_FIELD}.mtime") if mtime else None,
            offload=_offload(doc.get("offload")),
        )


def _offload(raw: Any) -> Offload | None:
    if raw is None:
        return None
    where = f"{TIERING_FIELD}.offload"
    if not isinstance(raw, dict):
        raise InvalidField(where, f"must be an object, not {shown_value(raw)}")
    mirrors = raw.get("mirrors") or []
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise InvalidField(f"{where}.mirrors", "must be a list of strings")
    return Offload(
        url=text_field(raw.get("url"), f"{where}.url"),
        key=text_field(raw.get("key"), f"{where}.key"),
        offset=count_field(raw.get("offset"), f"{where}.offset"),
        length=count_field(raw.get("length"), f"{where}.length"),
        mirrors=list(mirrors),
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
    # When the server removes the record (its time plus its Nats-TTL header, ADR-43), read
    # from the server like mtime, never written into the record (natsobj.lifecycle).
    expires: datetime | None = None
    # A delete that is an expiry: the server's subject delete marker, not a tombstone.
    expired: bool = False

    @property
    def is_link(self) -> bool:
        return self.link is not None

    @property
    def delete_marker(self) -> bool:
        """Whether this is a versioned delete's marker (a version), not a plain tombstone."""
        return self.deleted and DELETE_MARKER_HEADER in self.headers

    @property
    def version_id(self) -> str | None:
        """The id of the version this record is (its nuid, as ``get(name, version=)`` takes
        it), or None for a record that is no version: a plain tombstone (it keeps the nuid of
        what it deleted) or an expiry."""
        if self.deleted and not self.delete_marker:
            return None
        return self.nuid or None

    @property
    def offloaded(self) -> bool:
        """The bytes live outside the bucket (``Offload``), not in its chunks."""
        return self.tiering is not None and self.tiering.offload is not None

    @property
    def stands_for(self) -> int | None:
        """The meta sequence of the version this record restates (written by an offload or a
        rehydrate, not a new version), or None for a record of its own. What a record says
        until ``natsobj.aio.restate_proof.proven`` has checked it against that version."""
        return self.tiering.replaces if self.tiering is not None else None

    @property
    def rolls_up(self) -> bool:
        """Whether publishing this record removes the name's earlier ones: all but a
        restatement, which keeps the version it restates for readers to prove it by."""
        return self.stands_for is None

    def restates(self, version: ObjectInfo) -> bool:
        """Whether this record provably restates ``version`` (the record at the sequence it
        names, read from the server): the same object and the same bytes (digest and size:
        what the bytes are; the nuid says where they are, which a rehydrate changes), with
        the same description, headers and metadata, so a reader who saw ``version`` has
        nothing new to see."""
        return (
            version.stands_for is None
            and not version.deleted
            and not self.deleted
            and version.link is None
            and bool(version.digest)
            and (version.name, version.size, version.digest) == (self.name, self.size, self.digest)
            and (version.description, version.headers, version.metadata)
            == (self.description, self.headers, self.metadata)
        )

    def as_new_version(self) -> ObjectInfo:
        """This record taken as a version of its own, not a restatement (where its bytes are,
        when offloaded, still holds)."""
        tiering = self.tiering.evolve_for_update() if self.tiering is not None else None
        return replace(self, tiering=tiering)

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
        """The record as written; BadObjectMeta, before anything is sent, for one above
        ``MAX_RECORD_BYTES``, which readers would refuse, or holding text UTF-8 cannot carry
        (a lone surrogate copied from a record another client wrote)."""
        text = json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)
        try:
            data = text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate, read from a record's \ud800
            raise BadObjectMeta(
                f"the meta record would hold text that is not UTF-8 ({exc.reason})",
                bucket=self.bucket,
                name=self.name,
                hint="A record another client wrote carries it; delete the object with a"
                " client that writes a fresh record, or purge its meta subject.",
            ) from None
        if len(data) > MAX_RECORD_BYTES:
            raise BadObjectMeta(
                f"the meta record would take {len(data)} bytes, more than the"
                f" {MAX_RECORD_BYTES} a record may",
                bucket=self.bucket,
                name=self.name,
                hint="Keep metadata, headers and the description short; store the rest as an"
                " object of its own.",
            )
        return data

    def check_size(self) -> None:
        """BadObjectMeta now, before a put sends any chunk, for a record that would be above
        ``MAX_RECORD_BYTES`` once its nuid, size, chunk count and digest are filled in."""
        filled = replace(self, nuid="N" * 22, size=MAX_COUNT, chunks=MAX_COUNT)
        replace(filled, digest=digest_of(b"")).encode()

    @classmethod
    def from_json(
        cls,
        data: bytes | str | dict[str, Any],
        *,
        mtime: datetime | None = None,
        sequence: int | None = None,
        bucket: str | None = None,
        name: str | None = None,
        token: str | None = None,
    ) -> ObjectInfo:
        """Parse a meta record written by any client. A record is untrusted input (anyone
        who may publish to the bucket writes them), so every field is checked before it can
        reach a subject, a size or a comparison; anything unusable is BadObjectMeta naming
        the bucket, the object (``name``, where the caller knows it) and the field. With
        ``token`` (the last token of the subject it was read from), its name must be the one
        that subject encodes; with ``bucket`` (where it was read), a ``bucket`` field naming
        another one is refused: the record is that bucket's, whatever it claims.

        Listings parse records by the hundred thousand, so the plain fields are read with one
        lookup each and the optional parts only when present."""
        shown = name  # the object errors name: the one asked for, else the record's own
        try:
            if isinstance(data, bytes | str) and len(data) > MAX_RECORD_BYTES:
                shown = shown if shown is not None or token is None else token_name(token)
                raise InvalidField("", f"takes {len(data)} bytes, more than {MAX_RECORD_BYTES}")
            doc = json.loads(data) if isinstance(data, bytes | str) else data
            if not isinstance(doc, dict):
                raise InvalidField("name", "is missing: the record is not a JSON object")
            get = doc.get
            # each field: an inline check of the usual value, the helper for anything else
            # (which accepts what it may and says what is wrong with the rest)
            name = get("name")
            if type(name) is not str or not name or not name.isascii():
                name = name_field(name)
            shown = shown if shown is not None else name
            if token is not None and not is_token_of(name, token):
                raise InvalidField(
                    "name", f"is not the name its subject encodes: {shown_value(name)}"
                )
            link = chunk_size = tiering = None
            if options := get("options"):
                chunk_size = options.get("max_chunk_size") if type(options) is dict else None
                if (
                    type(chunk_size) is not int
                    or not 0 < chunk_size <= MAX_COUNT
                    or len(options) != 1
                ):
                    link, chunk_size = _options(options)  # a link, or anything unusual
            if (tiering_doc := get(TIERING_FIELD)) is not None:
                if not isinstance(tiering_doc, dict):
                    raise InvalidField(
                        TIERING_FIELD, f"must be an object, not {shown_value(tiering_doc)}"
                    )
                tiering = Tiering.from_json(tiering_doc)
                if tiering.offload is not None:
                    link = None  # the placeholder for other clients, not a link of the user's
            nuid = get("nuid")
            if type(nuid) is not str or not nuid.isalnum() or len(nuid) > MAX_NUID:
                nuid = nuid_field(nuid)
            size, chunks = get("size"), get("chunks")
            if type(size) is not int or not 0 <= size <= MAX_COUNT:
                size = count_field(size, "size")
            if type(chunks) is not int or not 0 <= chunks <= MAX_COUNT:
                chunks = count_field(chunks, "chunks")
            digest, deleted = get("digest", ""), get("deleted", False)
            if type(digest) is not str:
                digest = text_field(digest, "digest")
            if type(deleted) is not bool:
                deleted = flag_field(deleted, "deleted")
            record_bucket, description = get("bucket", ""), get("description", "")
            if type(record_bucket) is not str:
                record_bucket = text_field(record_bucket, "bucket")
            if bucket and record_bucket and record_bucket != bucket:
                # the bucket is where the record was read: following its claim would list,
                # fetch or delete another bucket's object
                raise InvalidField("bucket", f"names another bucket: {shown_value(record_bucket)}")
            if type(description) is not str:
                description = text_field(description, "description")
            headers, metadata = get("headers"), get("metadata")
            return cls(
                name,
                bucket or record_bucket,
                nuid,
                size,
                chunks,
                digest,
                deleted,
                description,
                headers_field(headers) if headers else {},
                metadata_field(metadata) if metadata else {},
                link,
                chunk_size,
                mtime,
                sequence,
                tiering,
            )
        except InvalidField as exc:
            raise BadObjectMeta(f"meta record {exc}", bucket=bucket, name=shown) from None
        except (ValueError, TypeError, RecursionError) as exc:  # not JSON at all
            raise BadObjectMeta(
                f"cannot parse object meta: {shown_value(exc)}", bucket=bucket, name=shown
            ) from None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with mtime and sequence, for task results, run tags and listings."""
        out = self.to_json()
        out["mtime"] = self.mtime.isoformat() if self.mtime else None
        out["sequence"] = self.sequence
        out["deleted"] = self.deleted
        out["expires"] = self.expires.isoformat() if self.expires else None
        out["expired"] = self.expired
        out.setdefault("digest", "")
        return out

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ObjectInfo:
        mtime, expires = doc.get("mtime"), doc.get("expires")
        info = cls.from_json(
            doc,
            mtime=datetime.fromisoformat(mtime) if isinstance(mtime, str) else mtime,
            sequence=doc.get("sequence"),
        )
        info.expires = datetime.fromisoformat(expires) if isinstance(expires, str) else expires
        info.expired = doc.get("expired") is True
        return info

    def evolve(self, **changes: Any) -> ObjectInfo:
        return replace(self, **changes)


def _options(raw: object) -> tuple[ObjectLink | None, int | None]:
    """The link and the chunk size from ``options``."""
    if not isinstance(raw, dict):
        raise InvalidField("options", f"must be an object, not {shown_value(raw)}")
    link = None
    link_doc = raw.get("link")
    if link_doc is not None and not isinstance(link_doc, dict):
        raise InvalidField("options.link", f"must be an object, not {shown_value(link_doc)}")
    if link_doc and link_doc.get("bucket") is not None:
        bucket = link_doc["bucket"]
        if not isinstance(bucket, str) or not is_bucket_name(bucket):
            raise InvalidField(
                "options.link.bucket", f"is not a bucket name: {shown_value(bucket)}"
            )
        target = link_doc.get("name")
        link = ObjectLink(bucket, name_field(target, "options.link.name") if target else "")
    chunk_size = count_field(raw.get("max_chunk_size"), "options.max_chunk_size")
    return link, chunk_size or None


@dataclass(frozen=True)
class StreamState:
    """What a bucket's stream holds. ``subjects`` is filled only for an info asked with a
    subject filter (message counts by subject, one page of them)."""

    messages: int = 0
    bytes: int = 0
    first_sequence: int = 0
    last_sequence: int = 0
    subjects: dict[str, int] = field(default_factory=dict)
    subjects_total: int = 0  # every subject the filter matches, over all pages


@dataclass(frozen=True)
class StreamInfo:
    """A bucket's stream as the leader's ``STREAM.INFO`` describes it, typed once here rather
    than dug out of the reply wherever a field is needed.

    ``config`` is kept as the server sent it: an update sends the whole configuration back
    with its changes, and fields this client does not know must survive that. ``created``
    tells a bucket from an earlier one of the same name (a change cursor's stream);
    ``clustered`` whether the stream has a cluster (replicas may answer reads)."""

    config: dict[str, Any] = field(default_factory=dict)
    state: StreamState = field(default_factory=StreamState)
    created: str = ""
    clustered: bool = False
    ts: str = ""

    @classmethod
    def from_response(cls, response: dict[str, Any]) -> StreamInfo:
        state = response.get("state") or {}
        return cls(
            config=dict(response.get("config") or {}),
            state=StreamState(
                messages=int(state.get("messages") or 0),
                bytes=int(state.get("bytes") or 0),
                first_sequence=int(state.get("first_seq") or 0),
                last_sequence=int(state.get("last_seq") or 0),
                subjects=dict(state.get("subjects") or {}),
                subjects_total=int(response.get("total") or 0),
            ),
            created=str(response.get("created") or ""),
            clustered=bool(response.get("cluster")),
            ts=str(response.get("ts") or ""),
        )

    @property
    def replicas(self) -> int:
        return int(self.config.get("num_replicas") or 1)

    @property
    def allow_direct(self) -> bool:
        return bool(self.config.get("allow_direct", False))

    @property
    def server_time(self) -> datetime | None:
        """The server's clock when it answered (``ts``): expiry is counted on it."""
        return parse_server_time(self.ts) if self.ts else None

    @property
    def allow_atomic(self) -> bool:
        """Whether the stream takes atomic batch publishes (ADR-50, server 2.12+)."""
        return bool(self.config.get("allow_atomic", False))


SERVER_METADATA = "_nats"  # the prefix of the keys the server adds to a stream's metadata


def user_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """A bucket stream's metadata without the keys the server adds (its version, ...): they
    are not the user's, so no face shows them, and an update that leaves them out lets the
    server keep them."""
    return {k: v for k, v in (metadata or {}).items() if not k.startswith(SERVER_METADATA)}


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
    # objects (and their bytes) that live outside the bucket; None unless
    # status(count_offloaded=True)
    offloaded_objects: int | None = None
    offloaded_bytes: int | None = None
    stream_info: StreamInfo = field(default_factory=StreamInfo, repr=False)

    @classmethod
    def from_stream_info(cls, bucket: str, info: StreamInfo) -> StoreStatus:
        config, state = info.config, info.state
        max_age = int(config.get("max_age") or 0)
        return cls(
            bucket=bucket,
            description=config.get("description", "") or "",
            metadata=user_metadata(config.get("metadata")),
            ttl=timedelta(microseconds=max_age / 1000) if max_age else None,
            storage=config.get("storage", "file"),
            replicas=info.replicas,
            sealed=bool(config.get("sealed", False)),
            size=state.bytes,
            max_bytes=int(config.get("max_bytes", -1)),
            is_compressed=config.get("compression", "none") == "s2",
            placement=config.get("placement"),
            messages=state.messages,
            last_sequence=state.last_sequence,
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
            "placement": self.placement,
            "backing_store": self.backing_store,
            "messages": self.messages,
            "offloaded_objects": self.offloaded_objects,
            "offloaded_bytes": self.offloaded_bytes,
        }
