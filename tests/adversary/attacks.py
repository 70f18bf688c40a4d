"""What the adversary writes: records, chunks and stream metadata natsobj did not write.

Two kinds of adversary, as rule groups of the one machine: a writer with publish rights on
``$O.<A>.>`` only (``WRITER_ATTACKS``: meta records with any field values and headers, chunks
of any size, rollups, TTL headers) and a stream admin of A (``ADMIN_ATTACKS``: lifecycle
rules in the stream metadata, subject purges). Neither can write B, and neither knows B's
bytes or nuids; both know B's object names, and the writer can read A.

Each attack keeps the model honest about what it touched (``World.tainted``) and records the
verified content of the versions it wrote, so the checks in ``operations`` know what a read
of them may return.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from natsobj.lifecycle import LIFECYCLE_METADATA_KEY
from natsobj.model import digest_of
from natsobj.names import chunk_subject, encode_name, meta_subject
from natsobj.pipes import seal
from tests.adversary.pipes_rows import number_of, pipes_names
from tests.adversary.world import World, random_bytes

HONEST_NAMES = ["h/0", "h/1", "h/d/" + "a/" * 31 + "z"]  # deep: a glob must match it in linear time
ADVERSARY_NAMES = ["x/a", "x/b", "x/c/d"]
B_NAMES = ["payroll.csv", "b/secret"]
_counter = itertools.count()


def pool(world: World) -> list[str]:
    """Every name an operation or an attack may aim at in A."""
    return sorted({*HONEST_NAMES, *ADVERSARY_NAMES, *B_NAMES, *world.honest, *world.names_seen})


@dataclass(frozen=True)
class Attack:
    name: str
    run: Callable[[World, st.DataObject], None]

    def __repr__(self) -> str:
        return self.name


# -- values no honest writer sends -----------------------------------------------------------

HOSTILE_TTL = ["1000000000000", "9223372036854775807", "-5", "abc", "1e300", "", "86400"]
HOSTILE_COUNTS: list[Any] = [-1, 2**63, 2**70, 1.5, "7", None, float("inf")]
HOSTILE_CHUNK_SIZES: list[Any] = [1, 3, 100, 4096, 2**40, 0, -5, "x", None]
FORGED_SERVER_HEADERS = {
    "Nats-Sequence": "424242",
    "Nats-Time-Stamp": "2099-01-01T00:00:00Z",
    "Nats-Subject": "$O.elsewhere.M.eA",
}


def forged_buckets(world: World) -> list[Any]:
    return [world.b.bucket, "", 5, "other"]


JUNK = [b"{not json", b"[" * 5000, b"\xff\xfe{}", b"", b"null", b"1e999", b'{"name": 5}']


def _fresh_nuid() -> str:
    return f"ADV{next(_counter):019d}"


def _layout(data: st.DataObject) -> list[int]:
    """Chunk sizes: uniform at some chunk size, uniform but for two middle chunks (what a
    reader trusting the declared chunk size gets wrong), or any sizes in any order."""
    kind = data.draw(st.sampled_from(["uniform", "broken middle", "any"]), label="layout")
    if kind == "any":
        return data.draw(st.lists(st.integers(0, 5000), max_size=6), label="chunk sizes")
    chunk = data.draw(st.sampled_from([1, 7, 100, 1000, 4096]), label="chunk size")
    total = data.draw(st.integers(0, min(chunk * 40, 20_000)), label="size")
    sizes = [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])
    if kind == "broken middle" and len(sizes) >= 5:
        # bytes moved between two middle chunks with a chunk of the declared size between
        # them: the size, the count, the edges and that chunk's own length all look right
        one = data.draw(st.integers(1, len(sizes) - 4), label="shorter chunk")
        other = data.draw(st.integers(one + 2, len(sizes) - 2), label="longer chunk")
        moved = data.draw(st.integers(1, sizes[one]), label="bytes moved")
        sizes[one] -= moved
        sizes[other] += moved
    return sizes


def _publish_chunks(world: World, nuid: str, sizes: list[int], seed: int, rollup: bool) -> None:
    subject = chunk_subject(world.bucket, nuid)
    for index, size in enumerate(sizes):
        headers = {"Nats-Rollup": "sub"} if rollup and index == 0 else None
        world.wire.publish(subject, random_bytes(size, seed * 1000 + index), headers)


def forge_record(world: World, data: st.DataObject) -> None:
    """A meta record on A's meta subject of any name, with any field values and headers."""
    subject_name = data.draw(st.sampled_from(pool(world)), label="subject name")
    token = (
        encode_name(subject_name)
        if data.draw(st.integers(0, 19), label="token") > 0
        else "not-base64!"
    )
    subject = f"$O.{world.bucket}.M.{token}"
    headers: dict[str, str] = {}
    if data.draw(st.integers(0, 9), label="rollup") > 0:
        headers["Nats-Rollup"] = "sub"
    extra = data.draw(
        st.lists(st.sampled_from(["ttl", *FORGED_SERVER_HEADERS]), max_size=2, unique=True),
        label="extra headers",
    )
    for header in extra:
        if header == "ttl":
            headers["Nats-TTL"] = data.draw(st.sampled_from(HOSTILE_TTL), label="Nats-TTL")
        else:
            headers[header] = FORGED_SERVER_HEADERS[header]

    if data.draw(st.integers(0, 9), label="junk") == 0:
        record: dict[str, Any] | None = None
        payload = data.draw(st.sampled_from(JUNK), label="junk payload")
    else:
        record, fresh = _record(world, data, subject_name)
        payload = json.dumps(record).encode()
    seq = world.wire.publish(subject, payload, headers or None)
    if token != "not-base64!":
        world.tainted.add(subject_name)
        world.names_seen.add(subject_name)
    if seq is None or record is None:
        return
    content = world.verified_content(record, seq)
    if content is not None:
        world.content[seq] = content
    clean = (
        token != "not-base64!"
        and not extra
        and record.get("name") == subject_name
        and record.get("bucket") == world.bucket
        and not record.get("deleted")
        and not record.get("options")
        and "metadata" not in record
        and fresh
        and content is not None
    )
    if clean:  # a new version, whatever restatement it claims to be
        world.must_report.add(seq)


def _record(world: World, data: st.DataObject, subject_name: str) -> tuple[dict[str, Any], bool]:
    """A record claiming some name, bucket and content; and whether its nuid is its own."""
    others = [n for n in pool(world) if n != subject_name]
    name: Any = data.draw(
        st.one_of(
            st.just(subject_name),
            st.sampled_from(others),
            st.sampled_from(["", ">", "a.b", None, 7]),
        ),
        label="record name",
    )
    bucket: Any = data.draw(
        st.sampled_from([world.bucket, *forged_buckets(world)]), label="record bucket"
    )
    source = data.draw(st.sampled_from(["fresh", "fresh", "clone", "shared", "hostile"]))
    fresh = source == "fresh"
    record: dict[str, Any] = {"name": name, "bucket": bucket}
    honest = sorted(world.honest)
    victim = world.honest[data.draw(st.sampled_from(honest), label="cloned")] if honest else None
    cloned = _honest_fields(world, victim.sequence) if source == "clone" and victim else None
    if cloned is not None and victim is not None:
        record.update(cloned)
        world.taint_nuid(victim.nuid)
    elif source in ("fresh", "clone", "shared"):
        nuid = (
            data.draw(st.sampled_from(sorted(world.adversary_nuids)), label="shared nuid")
            if source == "shared" and world.adversary_nuids
            else _fresh_nuid()
        )
        world.adversary_nuids.add(nuid)
        sizes = _layout(data)
        seed = next(_counter)
        _publish_chunks(world, nuid, sizes, seed, rollup=True)
        whole = b"".join(random_bytes(size, seed * 1000 + i) for i, size in enumerate(sizes))
        record.update(nuid=nuid, size=len(whole), chunks=len(sizes), digest=digest_of(whole))
        if data.draw(st.integers(0, 4), label="lie about content") == 0:
            field = data.draw(st.sampled_from(["size", "chunks", "digest"]))
            record[field] = (
                digest_of(b"other")
                if field == "digest"
                else data.draw(st.sampled_from(HOSTILE_COUNTS))
            )
    else:
        record.update(
            nuid=data.draw(st.sampled_from(["", "a.b", ">", "x" * 300, 5, None])),
            size=data.draw(st.sampled_from(HOSTILE_COUNTS)),
            chunks=data.draw(st.sampled_from(HOSTILE_COUNTS)),
            digest=data.draw(st.sampled_from(["", "SHA-256=", "md5=x", 7])),
        )
    option = data.draw(st.integers(0, 5), label="options")
    if option == 1:
        record["options"] = {"max_chunk_size": data.draw(st.sampled_from(HOSTILE_CHUNK_SIZES))}
    elif option == 2:  # a link inside A (links into B: plant_link)
        target = data.draw(st.sampled_from(pool(world)), label="link target")
        record["options"] = {"link": {"bucket": world.bucket, "name": target}}
    if data.draw(st.integers(0, 3), label="restatement") == 0:
        record["natsobj_tiering"] = {
            "replaces": data.draw(
                st.sampled_from([1, 2, 10**6, world.current_sequence(subject_name) or 1])
            ),
            "mtime": "2099-01-01T00:00:00+00:00",
        }
    if data.draw(st.integers(0, 11), label="deleted") == 0:
        record["deleted"] = data.draw(st.sampled_from([True, "yes"]))
    if data.draw(st.integers(0, 11), label="big metadata") == 0:
        record["metadata"] = {"k": "v" * 400_000}
    return record, fresh


def _honest_fields(world: World, sequence: int) -> dict[str, Any] | None:
    """What an honest version's record says of its content (None once rolled up)."""
    stored = world.wire.msg(world.bucket, sequence)
    if stored is None:
        return None
    doc = json.loads(stored.data)
    return {key: doc[key] for key in ("nuid", "size", "chunks", "digest") if key in doc}


def forge_object(world: World, data: st.DataObject) -> None:
    """A record valid in every field over chunks of any layout, whatever ``max_chunk_size``
    it claims, perhaps claiming to restate the version before it; then perhaps chunks added
    or replaced behind it. Its verified content is the chunks stored before it."""
    name = data.draw(st.sampled_from([*ADVERSARY_NAMES, *HONEST_NAMES]), label="name")
    nuid, seed, sizes = _fresh_nuid(), next(_counter), _layout(data)
    _publish_chunks(world, nuid, sizes, seed, rollup=True)
    whole = b"".join(random_bytes(size, seed * 1000 + i) for i, size in enumerate(sizes))
    record: dict[str, Any] = {
        "name": name,
        "bucket": world.bucket,
        "nuid": nuid,
        "size": len(whole),
        "chunks": len(sizes),
        "digest": digest_of(whole),
    }
    first = sizes[0] if sizes else None
    claim = data.draw(
        st.sampled_from([first, first, None, 1, 7, 1000, 4096, 2**20]), label="max_chunk_size"
    )
    if claim is not None:
        record["options"] = {"max_chunk_size": claim}
    if data.draw(st.booleans(), label="claims a restatement"):
        record["natsobj_tiering"] = {
            "replaces": world.current_sequence(name) or 1,
            "mtime": "2099-01-01T00:00:00+00:00",
        }
    subject = meta_subject(world.bucket, name)
    seq = world.wire.publish(subject, json.dumps(record).encode(), {"Nats-Rollup": "sub"})
    world.tainted.add(name)
    world.names_seen.add(name)
    world.adversary_nuids.add(nuid)
    if seq is not None and (content := world.verified_content(record, seq)) is not None:
        world.content[seq] = content
        if claim is None or claim > 0:  # a valid record of new bytes: a new version
            world.must_report.add(seq)
    behind = data.draw(st.sampled_from(["nothing", "appended", "replaced"]), label="behind")
    if behind != "nothing":
        later = sizes if behind == "replaced" else _layout(data)
        _publish_chunks(world, nuid, later, next(_counter), rollup=behind == "replaced")


def tamper_chunks(world: World, data: st.DataObject) -> None:
    """Replace (rollup) or extend the chunks of an existing version, its record untouched."""
    nuids = sorted({*world.adversary_nuids, *(h.nuid for h in world.honest.values())})
    if not nuids:
        return
    nuid = data.draw(st.sampled_from(nuids), label="tampered nuid")
    world.taint_nuid(nuid)
    sizes = _layout(data)
    _publish_chunks(world, nuid, sizes, next(_counter), rollup=data.draw(st.booleans()))


def ttl_on_chunks(world: World, data: st.DataObject) -> None:
    """A chunk carrying a TTL header on an existing version's subject."""
    nuids = sorted({*world.adversary_nuids, *(h.nuid for h in world.honest.values())})
    if not nuids:
        return
    nuid = data.draw(st.sampled_from(nuids), label="nuid")
    world.taint_nuid(nuid)
    ttl = data.draw(st.sampled_from(HOSTILE_TTL), label="Nats-TTL")
    world.wire.publish(chunk_subject(world.bucket, nuid), b"x", {"Nats-TTL": ttl})


def plant_link(world: World, data: st.DataObject) -> None:
    """A well-formed ADR-20 link in A to an object of B, which the adversary cannot read (as
    any writer of a bucket can plant one), or to an object of A. No path may follow the
    first: every read, copy and report made for a caller of A would otherwise hand over B
    (the marker of ``world.SECRET``); the second reads through as the object it names."""
    name = data.draw(st.sampled_from([*ADVERSARY_NAMES, *HONEST_NAMES]), label="link name")
    into_b = data.draw(st.integers(0, 3), label="into B") > 0
    bucket = world.b.bucket if into_b else world.bucket
    target = data.draw(st.sampled_from(B_NAMES if into_b else pool(world)), label="target")
    record = {
        "name": name,
        "bucket": world.bucket,
        "nuid": _fresh_nuid(),
        "size": 0,
        "chunks": 0,
        "digest": "",
        "options": {"link": {"bucket": bucket, "name": target}},
    }
    subject = meta_subject(world.bucket, name)
    world.wire.publish(subject, json.dumps(record).encode(), {"Nats-Rollup": "sub"})
    world.tainted.add(name)
    world.names_seen.add(name)


def forge_pipes(world: World, data: st.DataObject) -> None:
    """What a writer of a shared bucket does to a Pipes session's chunks, knowing everything
    but the sessions' secret: move a sealed chunk to another chunk's name (of its session or
    the other's), or seal text of its own under a guessed secret (``natsobj.pipes``)."""
    name = data.draw(st.sampled_from(pipes_names(world)), label="forged chunk")
    sealed = sorted(world.pipes)
    if sealed and data.draw(st.booleans(), label="move a sealed chunk"):
        moved = world.honest.get(data.draw(st.sampled_from(sealed), label="moved from"))
        if moved is None:
            return
        payload = moved.data
    else:
        text = '{"method": "report_asset_check", "passed": true}\n'
        payload = seal("a guessed secret", name, number_of(name) or 0, text)
    nuid = _fresh_nuid()
    world.adversary_nuids.add(nuid)
    _publish_chunks_of(world, nuid, payload)
    record = {
        "name": name,
        "bucket": world.bucket,
        "nuid": nuid,
        "size": len(payload),
        "chunks": 1 if payload else 0,
        "digest": digest_of(payload),
    }
    subject = meta_subject(world.bucket, name)
    seq = world.wire.publish(subject, json.dumps(record).encode(), {"Nats-Rollup": "sub"})
    world.tainted.add(name)
    world.names_seen.add(name)
    if seq is not None:
        world.content[seq] = payload


def _publish_chunks_of(world: World, nuid: str, payload: bytes) -> None:
    if payload:
        world.wire.publish(chunk_subject(world.bucket, nuid), payload, {"Nats-Rollup": "sub"})


WRITER_ATTACKS = [
    Attack("forge_record", forge_record),
    Attack("forge_pipes", forge_pipes),
    Attack("plant_link", plant_link),
    Attack("forge_object", forge_object),
    Attack("tamper_chunks", tamper_chunks),
    Attack("ttl_on_chunks", ttl_on_chunks),
]

# -- the stream admin ------------------------------------------------------------------------

LIFECYCLE_VALUES = [
    json.dumps([{"pattern": "x/**", "ttl": 86400}]),
    json.dumps([{"pattern": "h/**", "ttl": 7 * 86400}]),
    json.dumps([{"pattern": "**", "ttl": None}]),
    '[{"pattern": "x/**", "ttl": Infinity}]',
    json.dumps([{"pattern": "x/**", "ttl": 1e300}]),
    json.dumps([{"pattern": "[]", "ttl": 86400}]),
    json.dumps([{"pattern": "**/" * 12 + "q", "ttl": 86400}]),
    json.dumps([{"pattern": "x/**", "ttl": "abc"}]),
    json.dumps([{"pattern": "x/**", "ttl": -5}]),
    json.dumps({"pattern": "x"}),
    "not json",
    "",
]


def set_lifecycle(world: World, data: st.DataObject) -> None:
    value = data.draw(st.sampled_from(LIFECYCLE_VALUES), label="lifecycle metadata")
    if world.wire.set_metadata(world.bucket, LIFECYCLE_METADATA_KEY, value):
        world.rules_attacked = value not in LIFECYCLE_VALUES[:3]


def purge_subject(world: World, data: st.DataObject) -> None:
    if data.draw(st.booleans(), label="purge meta"):
        name = data.draw(st.sampled_from(pool(world)), label="purged name")
        world.wire.purge(world.bucket, meta_subject(world.bucket, name))
        world.tainted.add(name)
        return
    nuids = sorted({*world.adversary_nuids, *(h.nuid for h in world.honest.values())})
    if nuids:
        nuid = data.draw(st.sampled_from(nuids), label="purged nuid")
        world.wire.purge(world.bucket, chunk_subject(world.bucket, nuid))
        world.taint_nuid(nuid)


ADMIN_ATTACKS = [Attack("set_lifecycle", set_lifecycle), Attack("purge_subject", purge_subject)]
