"""Every read and write path natsobj offers, each with the checks its results are held to.

``OPERATIONS`` is the table the machine draws from: one row per path (the async core, the
fsspec filesystem, the CLI, the S3 gateway through boto3). **A new read or write path must be
added here**, with a checker
that says what it may return; the invariants every call is held to (its bound, its memory,
typed errors only) come with ``World.call``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
from botocore.exceptions import ClientError
from click.testing import CliRunner
from hypothesis import strategies as st

from natsobj.aio import lifecycle_apply as restamp
from natsobj.aio.copy import copy_object
from natsobj.aio.put_modes import CREATE
from natsobj.aio.ranges import byte_range
from natsobj.cli import cli
from natsobj.errors import ObjectExists
from natsobj.gateway.multipart import MIN_PART_SIZE
from natsobj.model import ObjectInfo
from tests.adversary.attacks import HONEST_NAMES, pool
from tests.adversary.s3_calls import s3_call
from tests.adversary.world import (
    FS_ERRORS,
    TRANSFER_BOUND,
    Violation,
    World,
    random_bytes,
)

# A copy, restamp or put stores at least this many bytes per chunk (a foreign record's
# max_chunk_size must not multiply storage; issue 28 point 7).
SANE_MIN_CHUNK = 512


@dataclass(frozen=True)
class Operation:
    name: str
    run: Callable[[World, st.DataObject], None]

    def __repr__(self) -> str:
        return self.name


def _name(world: World, data: st.DataObject) -> str:
    return data.draw(st.sampled_from(pool(world)), label="name")


def _bounds(data: st.DataObject) -> tuple[int | None, int | None]:
    """fsspec's [start, end): either may be None or negative; often a short span, which
    touches one or two chunks (those whose neighbours' sizes a reader may not have read)."""
    point = st.one_of(st.none(), st.integers(-300, 25_000))
    start = data.draw(point, label="start")
    if start is not None and start >= 0 and data.draw(st.booleans(), label="short span"):
        return start, start + data.draw(st.integers(0, 300), label="length")
    return start, data.draw(point, label="end")


def _fs(world: World) -> Any:
    return fsspec.filesystem("nats", url=world.url)


def check_read(
    world: World,
    label: str,
    name: str,
    outcome: tuple[bool, Any],
    known: bytes | None,
    whole: bytes | None,
    span: tuple[int | None, int | None] | None = None,
) -> None:
    """Bytes read of ``name`` (all of it, or ``span``) are the verified object's: the
    version's known content when there is one, and what a whole read of the same version
    returned; an object nothing touched is read, and read exactly."""
    ok, result = outcome
    if not ok:
        if name in world.intact():
            raise Violation(f"{label} of {name!r}, which nothing touched, failed: {result!r}")
        return
    world.check_bytes(label, result)
    for reference, what in ((known, "the version's verified content"), (whole, "a whole read")):
        if reference is None:
            continue
        start, end = byte_range(len(reference), *span) if span else (0, len(reference))
        if result != reference[start:end]:
            raise Violation(
                f"{label} of {name!r} {span or ''} returned {len(result)} bytes that are not"
                f" {what} [{start}:{end}]: {result[:24]!r} vs {reference[start : start + 24]!r}"
            )


def _whole(world: World, name: str) -> bytes | None:
    ok, result = world.call(f"get_bytes({name!r})", lambda: world.a.get_bytes(name))
    check_read(world, "get_bytes", name, (ok, result), world.known_content(name), None)
    return result if ok else None


# -- reads -------------------------------------------------------------------------------------


def get_bytes(world: World, data: st.DataObject) -> None:
    _whole(world, _name(world, data))


def get_range(world: World, data: st.DataObject) -> None:
    name, span = _name(world, data), _bounds(data)
    known, whole = world.known_content(name), _whole(world, name)
    outcome = world.call(f"get_range({name!r}, {span})", lambda: world.a.get_range(name, *span))
    check_read(world, "get_range", name, outcome, known, whole, span)


def open_range(world: World, data: st.DataObject) -> None:
    """The core's seekable reader: seek, then read n bytes."""
    name = _name(world, data)
    offset = data.draw(st.integers(0, 20_000), label="offset")
    count = data.draw(st.integers(-1, 300) | st.integers(-1, 20_000), label="count")
    known, whole = world.known_content(name), _whole(world, name)

    async def seek_read() -> bytes:
        reader = await world.a.open_range(name)
        try:
            reader.seek(offset)
            return await reader.read(count)
        finally:
            await reader.close()

    outcome = world.call(f"open_range({name!r}).seek({offset}).read({count})", seek_read)
    span = (offset, None if count < 0 else offset + count)
    check_read(world, "open_range/seek/read", name, outcome, known, whole, span)


def fs_open_seek_read(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    offset = data.draw(st.integers(0, 20_000), label="offset")
    count = data.draw(st.integers(0, 300) | st.integers(0, 20_000), label="count")
    known, whole = world.known_content(name), _whole(world, name)

    def seek_read() -> bytes:
        with _fs(world).open(f"{world.bucket}/{name}", "rb") as handle:
            handle.seek(offset)
            return handle.read(count)

    outcome = world.call_blocking(f"fs.open({name!r}).seek({offset}).read({count})", seek_read)
    check_read(
        world, "fsspec open/seek/read", name, outcome, known, whole, (offset, offset + count)
    )


def fs_cat_file(world: World, data: st.DataObject) -> None:
    name, span = _name(world, data), _bounds(data)
    known, whole = world.known_content(name), _whole(world, name)
    outcome = world.call_blocking(
        f"fs.cat_file({name!r}, {span})",
        lambda: _fs(world).cat_file(f"{world.bucket}/{name}", *span),
    )
    check_read(world, "fsspec cat_file", name, outcome, known, whole, span)


def fs_cat_ranges(world: World, data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(pool(world)), min_size=1, max_size=4), label="names")
    spans = [_bounds(data) for _ in names]
    known = {name: world.known_content(name) for name in names}
    whole = {name: _whole(world, name) for name in set(names)}
    paths = [f"{world.bucket}/{name}" for name in names]
    ok, results = world.call_blocking(
        f"fs.cat_ranges({names}, {spans})",
        lambda: _fs(world).cat_ranges(
            paths, [s for s, _ in spans], [e for _, e in spans], on_error="return"
        ),
    )
    if not ok:
        raise Violation(f"fs.cat_ranges with on_error='return' raised {results!r}")
    for name, span, result in zip(names, spans, results, strict=True):
        allowed = isinstance(result, (bytes, *FS_ERRORS))
        if not allowed:
            raise Violation(
                f"fs.cat_ranges returned {type(result).__name__} for {name!r}: {result!r}"
            )
        outcome = (isinstance(result, bytes), result)
        check_read(world, "fsspec cat_ranges", name, outcome, known[name], whole[name], span)


def get_info(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    ok, info = world.call(f"get_info({name!r})", lambda: world.a.get_info(name))
    if not ok:
        if name in world.intact():
            raise Violation(f"get_info of {name!r}, which nothing touched, failed: {info!r}")
        return
    world.check_info("get_info", info)
    if info.as_dict()["bucket"] != world.bucket:
        raise Violation(f"get_info({name!r}).as_dict() names bucket {info.as_dict()['bucket']!r}")


def list_objects(world: World, data: st.DataObject) -> None:
    ok, infos = world.call("list()", lambda: world.a.list())
    if not ok:
        raise Violation(f"list() of the bucket failed: {infos!r}")
    world.check_listing("list", infos)


def iter_list(world: World, data: st.DataObject) -> None:
    async def collect() -> list[ObjectInfo]:
        return [info async for info in world.a.iter_list()]

    ok, infos = world.call("iter_list()", collect)
    if not ok:
        raise Violation(f"iter_list() of the bucket failed: {infos!r}")
    world.check_listing("iter_list", infos)


def fs_find(world: World, data: st.DataObject) -> None:
    ok, found = world.call_blocking("fs.find", lambda: _fs(world).find(world.bucket, detail=True))
    if not ok:
        raise Violation(f"fs.find of the bucket failed: {found!r}")
    prefix = f"{world.bucket}/"
    for path, entry in found.items():
        if not path.startswith(prefix):
            raise Violation(f"fs.find({world.bucket!r}) listed {path!r}, outside the bucket")
        world.check_bytes("fs.find", str(entry).encode())
    missing = [name for name in world.intact() if prefix + name not in found]
    if missing:
        raise Violation(f"fs.find left out {missing}, objects nothing touched")


def status(world: World, data: st.DataObject) -> None:
    world.call("status(count_offloaded=True)", lambda: world.a.status(count_offloaded=True))


# -- change feeds ------------------------------------------------------------------------------


def changes(world: World, data: st.DataObject) -> None:
    since = world.changes_cursor
    ok, result = world.call(f"changes({since})", lambda: world.a.changes(since, limit=100_000))
    if not ok:
        raise Violation(f"changes({since}) of the bucket failed: {result!r}")
    for info in result:
        world.check_info("changes", info)
    world.check_reported("changes", list(result), since)
    world.changes_cursor = result.last_sequence


def watch_initial(world: World, data: st.DataObject) -> None:
    """A new watch's initial replay: each name's latest record.

    The replay is read until the watch says its initial values are done, within the call's
    bound: a pause between two records (a loaded machine) is no reason to stop early. It
    polls because a replay that ends on a record the watch skips (unreadable, a restatement)
    turns ``initial_done`` without returning anything."""

    async def replay() -> list[ObjectInfo]:
        watcher = world.a.watch()
        seen = []
        try:
            await watcher.start()
            while not watcher.initial_done:
                info = await watcher.next(0.2)
                if info is not None:
                    seen.append(info)
        finally:
            await watcher.stop()
        return seen

    ok, infos = world.call("watch() initial replay", replay)
    if not ok:
        raise Violation(f"a watch of the bucket failed: {infos!r}")
    latest: dict[str, ObjectInfo] = {}
    for info in infos:
        world.check_info("watch", info)
        latest[info.name] = info
    for name in world.intact():
        if name not in latest or latest[name].nuid != world.honest[name].nuid:
            raise Violation(f"a watch's replay did not end on the current version of {name!r}")


def watch_live(world: World, data: st.DataObject) -> None:
    """The live watch opened with the bucket: every new version since the last drain."""
    since = world.watch_cursor
    last = world.wire.last_seq(world.bucket)

    async def drain() -> list[ObjectInfo]:
        seen = []
        while (info := await world.watcher.next(0.3)) is not None:
            seen.append(info)
        return seen

    ok, infos = world.call("live watch", drain)
    if not ok:
        raise Violation(f"the live watch failed: {infos!r}")
    for info in infos:
        world.check_info("live watch", info)
    world.check_reported("live watch", infos, since)
    world.watch_cursor = last


# -- transfers -----------------------------------------------------------------------------------


def _check_tree(world: World, label: str, root: Path, dest: Path, complete: bool) -> None:
    """A download of A writes only below ``dest``, no byte of B, and (when ``complete``)
    every object nothing touched, exactly."""
    if sorted(p.name for p in root.iterdir()) not in ([], [dest.name]):
        raise Violation(f"{label} wrote outside its destination: {list(root.iterdir())}")
    for path in dest.rglob("*") if dest.exists() else []:
        if path.is_file():
            world.check_bytes(f"{label} ({path.relative_to(dest)})", path.read_bytes())
    if complete:
        for name in world.intact():
            target = dest / name
            if not target.is_file() or target.read_bytes() != world.honest[name].data:
                raise Violation(f"{label} left out {name!r}, which nothing touched ({target})")


@contextlib.contextmanager
def _tree() -> Any:
    root = Path(tempfile.mkdtemp(prefix="adversary-"))
    try:
        yield root, root / "dest"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cli_sync(world: World, data: st.DataObject) -> None:
    with _tree() as (root, dest):
        args = ["--url", world.url, "sync", f"nats://{world.bucket}", str(dest)]
        ok, result = world.call_blocking(
            "natsobj sync", lambda: CliRunner().invoke(cli, args), bound=TRANSFER_BOUND
        )
        assert ok
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise Violation(f"natsobj sync crashed: {result.exception!r}")
        if "unexpected" in result.output:
            raise Violation(f"natsobj sync failed with an untyped error: {result.output}")
        # one object that fails to verify is reported and the rest are synced all the same
        _check_tree(world, "natsobj sync", root, dest, complete=True)


def fs_get_recursive(world: World, data: st.DataObject) -> None:
    with _tree() as (root, dest):
        ok, _ = world.call_blocking(
            "fs.get(recursive=True)",
            lambda: _fs(world).get(f"{world.bucket}/", str(dest) + "/", recursive=True),
            bound=TRANSFER_BOUND,
        )
        _check_tree(world, "fs.get(recursive=True)", root, dest, complete=ok)


def _check_copy(
    world: World,
    label: str,
    name: str,
    target: str,
    whole: bytes | None,
    outcome: tuple[bool, Any],
    stored: Callable[[], ObjectInfo],
    read_back: Callable[[], tuple[bool, Any]],
) -> None:
    """A copy of ``name`` to ``target`` held to the rules of every copy: refused only for an
    object something touched, or while the rules are unreadable (a copy is a put, and puts
    are refused then, typed); done only where a whole verified read is, in sane chunks, and
    read back as that read's bytes."""
    ok, result = outcome
    if not ok:
        if name in world.intact() and not world.rules_attacked:
            raise Violation(f"{label} of {name!r}, which nothing touched, failed: {result!r}")
        return
    if whole is None:
        raise Violation(f"{label} of {name!r} succeeded where a whole verified read fails")
    info = stored()
    world.check_info(label, info)
    _check_chunks(label, info)
    world.remember_put(target, whole, info)
    check_read(world, f"{label} read back", target, read_back(), whole, None)


def copy(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    target = f"copies/{data.draw(st.integers(0, 2), label='copy')}"
    whole = _whole(world, name)
    outcome = world.call(
        f"copy({name!r} -> {target!r})", lambda: copy_object(world.a, name, world.a, target)
    )
    _check_copy(
        world,
        "copy",
        name,
        target,
        whole,
        outcome,
        lambda: outcome[1],
        lambda: world.call("get", lambda: world.a.get_bytes(target)),
    )


def _check_chunks(label: str, info: ObjectInfo) -> None:
    if info.chunks > max(1, math.ceil(info.size / SANE_MIN_CHUNK)):
        raise Violation(
            f"{label} stored {info.size} bytes of {info.name!r} in {info.chunks} chunks"
        )


# -- writes and maintenance ----------------------------------------------------------------------


def honest_put(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(HONEST_NAMES), label="honest name")
    size = data.draw(st.sampled_from([0, 1, 100, 5000, 70_000, 300_000]), label="size")
    chunk_size = data.draw(st.sampled_from([None, 4096, 65536]), label="chunk size")
    payload = random_bytes(size, data.draw(st.integers(0, 2**30), label="seed"))
    # a fresh handle reads the bucket's settings and rules now, as another process would
    fresh = data.draw(st.booleans(), label="fresh handle")

    async def put() -> ObjectInfo:
        store = await world.client.store(world.bucket) if fresh else world.a
        return await store.put(name, payload, chunk_size=chunk_size)

    ok, info = world.call(f"put({name!r}, {size} bytes, fresh handle: {fresh})", put)
    if not ok:
        if not world.rules_attacked:
            raise Violation(f"put of {name!r} failed: {info!r}")
        return
    world.check_info("put", info)
    world.remember_put(name, payload, info)


def put_if_absent(world: World, data: st.DataObject) -> None:
    """Create only (``put(mode=CREATE)``): never over an object a reader would get, hostile
    record or not; over a name never written or deleted, a new version."""
    name = _name(world, data)
    payload = random_bytes(data.draw(st.integers(0, 9000)), data.draw(st.integers(0, 2**30)))
    present = name in world.intact()  # an honest object no adversarial write touched
    ok, info = world.call(
        f"put({name!r}, mode=CREATE)", lambda: world.a.put(name, payload, mode=CREATE)
    )
    if not ok:
        if present and not isinstance(info, ObjectExists):
            raise Violation(f"put-if-absent over {name!r} failed with {info!r}, not ObjectExists")
        return
    if present:
        raise Violation(f"put-if-absent of {name!r} replaced the object there")
    world.check_info("put-if-absent", info)
    world.remember_put(name, payload, info)


def fs_pipe(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(HONEST_NAMES), label="honest name")
    payload = random_bytes(data.draw(st.integers(0, 9000)), data.draw(st.integers(0, 2**30)))
    ok, info = world.call_blocking(
        f"fs.pipe_file({name!r})", lambda: _fs(world).pipe_file(f"{world.bucket}/{name}", payload)
    )
    if not ok:
        if not world.rules_attacked:
            raise Violation(f"fs.pipe_file of {name!r} failed: {info!r}")
        return
    ok, info = world.call("get_info", lambda: world.a.get_info(name))
    assert ok, info
    world.remember_put(name, payload, info)


def delete(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    ok, tombstone = world.call(f"delete({name!r})", lambda: world.a.delete(name))
    if not ok:
        if name in world.intact():
            raise Violation(f"delete of {name!r}, which nothing touched, failed: {tombstone!r}")
        return
    world.check_info("delete", tombstone, server_time=False)  # it keeps the version's mtime
    world.honest.pop(name, None)


def fs_rm_recursive(world: World, data: st.DataObject) -> None:
    prefix = data.draw(st.sampled_from(["x", "b", "payroll.csv"]), label="rm prefix")
    path = f"{world.bucket}/{prefix}".rstrip("/")
    world.call_blocking(
        f"fs.rm({path!r}, recursive=True)", lambda: _fs(world).rm(path, recursive=True)
    )
    for name in list(world.honest):
        if name.startswith(prefix):
            world.honest.pop(name)  # gone or not, no longer a promise of the model


def compact(world: World, data: st.DataObject) -> None:
    world.call("compact(min_age=0)", lambda: world.a.compact(min_age=0))


def lifecycle_apply(world: World, data: st.DataObject) -> None:
    """Restamp what the rules say should expire: each restamp is a verified copy of the
    version it replaces, in sane chunks."""

    async def plan_and_apply() -> list[restamp.Restamp]:
        return await restamp.apply(world.a, await restamp.plan(world.a))

    ok, done = world.call("lifecycle apply", plan_and_apply)
    if not ok:
        return  # a typed refusal (rules it cannot read, a version that fails to verify)
    for item in done:
        name = item.info.name
        if not item.done:
            continue
        ok, info = world.call("get_info", functools.partial(world.a.get_info, name))
        if not ok:
            continue
        world.check_info("lifecycle apply", info)
        _check_chunks("lifecycle apply", info)
        known = world.content.get(item.info.sequence or 0)
        if known is not None:
            world.content[info.sequence] = known
        if name in world.intact():
            world.remember_put(name, world.honest[name].data, info)
            world.must_report.discard(info.sequence)  # a restamp may keep the version's identity


# -- the S3 gateway, through boto3 -----------------------------------------------------------------


def _s3_on(world: World, operation: str, name: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
    """A request on ``name``: failing on an object nothing touched is a violation."""
    ok, result = s3_call(world, f"S3 {operation} {name!r}", fn)
    if not ok and name in world.intact():
        raise Violation(f"S3 {operation} of {name!r}, which nothing touched, failed: {result!r}")
    return ok, result


def _s3_write(world: World, operation: str, name: str, fn: Callable[[], Any]) -> ObjectInfo | None:
    """A request that writes ``name`` in A, refused only while the lifecycle rules are
    attacked (puts are refused then, typed); the record it stored, checked."""
    ok, result = s3_call(world, f"S3 {operation} {name!r}", fn)
    if not ok:
        if not world.rules_attacked:
            raise Violation(f"S3 {operation} of {name!r} failed: {result!r}")
        return None
    info = _stored(world, name)
    world.check_info(f"S3 {operation}", info)
    return info


def _stored(world: World, name: str) -> ObjectInfo:
    """The record of ``name`` a write that succeeded left in A."""
    ok, info = world.call("get_info", lambda: world.a.get_info(name))
    assert ok, info
    return info


def _s3_code(error: BaseException) -> str | None:
    return error.response["Error"]["Code"] if isinstance(error, ClientError) else None


def _s3_read(world: World, name: str, **request: Any) -> bytes:
    body: bytes = world.s3.get_object(Bucket=world.bucket, Key=name, **request)["Body"].read()
    return body


def s3_get(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    known, whole = world.known_content(name), _whole(world, name)
    outcome = s3_call(world, f"S3 GetObject {name!r}", lambda: _s3_read(world, name))
    if outcome[0] and whole is None:
        raise Violation(
            f"S3 GetObject of {name!r} returned {len(outcome[1])} bytes where a whole verified"
            " read of the same version fails"
        )
    check_read(world, "S3 GetObject", name, outcome, known, whole)


def s3_get_range(world: World, data: st.DataObject) -> None:
    """``Range: bytes=first-last``, often a short span inside one or two chunks."""
    name = _name(world, data)
    first = data.draw(st.integers(0, 25_000), label="first")
    length = data.draw(st.integers(1, 300) | st.integers(1, 25_000), label="length")
    header = f"bytes={first}-{first + length - 1}"
    known, whole = world.known_content(name), _whole(world, name)
    ok, result = s3_call(
        world, f"S3 GetObject {name!r} {header}", lambda: _s3_read(world, name, Range=header)
    )
    if not ok and whole is not None and first >= len(whole):
        if _s3_code(result) != "InvalidRange":
            raise Violation(f"S3 {header} past the end of {name!r} answered {result!r}")
        return
    check_read(
        world, "S3 ranged GetObject", name, (ok, result), known, whole, (first, first + length)
    )


def s3_head(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    whole = _whole(world, name)
    ok, head = _s3_on(
        world, "HeadObject", name, lambda: world.s3.head_object(Bucket=world.bucket, Key=name)
    )
    if not ok:
        return
    world.check_bytes("S3 HeadObject", repr(head).encode())
    if whole is not None and head["ContentLength"] != len(whole):
        raise Violation(
            f"S3 HeadObject says {name!r} holds {head['ContentLength']} bytes; a verified read"
            f" of it returns {len(whole)}"
        )


def s3_list(world: World, data: st.DataObject) -> None:
    """ListObjectsV2 page by page (continuation tokens), as the AWS CLI lists."""
    page_size = data.draw(st.sampled_from([2, 1000]), label="page size")

    def listing() -> list[str]:
        keys = []
        pages = world.s3.get_paginator("list_objects_v2").paginate(
            Bucket=world.bucket, PaginationConfig={"PageSize": page_size}
        )
        for page in pages:
            world.check_bytes("S3 ListObjectsV2", repr(page).encode())
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys

    ok, keys = s3_call(world, f"S3 ListObjectsV2 ({page_size} a page)", listing, TRANSFER_BOUND)
    if not ok:
        raise Violation(f"S3 ListObjectsV2 of the bucket failed: {keys!r}")
    if keys != sorted(set(keys)):
        raise Violation(f"S3 ListObjectsV2 listed keys out of order or twice: {keys}")
    missing = [name for name in world.intact() if name not in keys]
    if missing:
        raise Violation(f"S3 ListObjectsV2 left out {missing}, objects nothing touched")


def s3_put(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(HONEST_NAMES), label="honest name")
    size = data.draw(st.sampled_from([0, 1, 5000, 70_000]), label="size")
    payload = random_bytes(size, data.draw(st.integers(0, 2**30), label="seed"))
    info = _s3_write(
        world,
        "PutObject",
        name,
        lambda: world.s3.put_object(Bucket=world.bucket, Key=name, Body=payload),
    )
    if info is not None:
        world.remember_put(name, payload, info)


def s3_copy(world: World, data: st.DataObject) -> None:
    """CopyObject within A: a verified copy, or a refusal."""
    name = _name(world, data)
    target = f"copies/{data.draw(st.integers(0, 2), label='copy')}"
    whole = _whole(world, name)
    outcome = s3_call(
        world,
        f"S3 CopyObject {name!r} -> {target!r}",
        lambda: world.s3.copy_object(
            Bucket=world.bucket, Key=target, CopySource={"Bucket": world.bucket, "Key": name}
        ),
    )
    if name == target:  # S3 refuses a copy onto itself that changes nothing
        if outcome[0]:
            raise Violation(f"S3 CopyObject of {name!r} onto itself changing nothing succeeded")
        return
    _check_copy(
        world,
        "S3 CopyObject",
        name,
        target,
        whole,
        outcome,
        lambda: _stored(world, target),
        lambda: s3_call(world, f"S3 GetObject {target!r}", lambda: _s3_read(world, target)),
    )


def s3_delete(world: World, data: st.DataObject) -> None:
    name = _name(world, data)
    ok, _ = _s3_on(
        world, "DeleteObject", name, lambda: world.s3.delete_object(Bucket=world.bucket, Key=name)
    )
    if ok:
        world.honest.pop(name, None)


def s3_delete_batch(world: World, data: st.DataObject) -> None:
    """DeleteObjects of several names: a name that cannot be deleted (its record hostile) is an
    ``<Error>`` of its own, and every other name is deleted all the same."""
    names = data.draw(
        st.lists(st.sampled_from(pool(world)), min_size=1, max_size=4, unique=True), label="names"
    )
    intact = [name for name in names if name in world.intact()]
    ok, result = s3_call(
        world,
        f"S3 DeleteObjects {names}",
        lambda: world.s3.delete_objects(
            Bucket=world.bucket, Delete={"Objects": [{"Key": name} for name in names]}
        ),
    )
    if not ok:
        raise Violation(f"S3 DeleteObjects of {names} failed as a whole: {result!r}")
    world.check_bytes("S3 DeleteObjects", repr(result).encode())
    failed = {error["Key"] for error in result.get("Errors", [])}
    deleted = {entry["Key"] for entry in result.get("Deleted", [])}
    if failed & deleted or failed | deleted != set(names):
        raise Violation(f"S3 DeleteObjects of {names}: deleted {deleted}, failed {failed}")
    for name in names:
        if name in failed and name in intact:
            raise Violation(f"S3 DeleteObjects failed on {name!r}, which nothing touched")
        if name in deleted:
            world.honest.pop(name, None)
    for name in intact:
        ok, info = world.call(f"get_info({name!r})", lambda name=name: world.a.get_info(name))
        if ok:
            raise Violation(f"S3 DeleteObjects deleted {name!r}, which still reads: {info!r}")


def _s3_part_copy(
    world: World, data: st.DataObject, upload: dict[str, str]
) -> tuple[bool, bytes | None]:
    """UploadPartCopy of a range of any object of A, as part 2: (whether it was stored, the
    bytes it must hold where the source's verified content is known)."""
    source = _name(world, data)
    first = data.draw(st.integers(0, 25_000), label="copy first")
    last = first + data.draw(st.integers(0, 300) | st.integers(0, 25_000), label="copy length")
    known, whole = world.known_content(source), _whole(world, source)
    ok, result = s3_call(
        world,
        f"S3 UploadPartCopy {source!r} bytes={first}-{last}",
        lambda: world.s3.upload_part_copy(
            **upload,
            PartNumber=2,
            CopySource={"Bucket": world.bucket, "Key": source},
            CopySourceRange=f"bytes={first}-{last}",
        ),
    )
    reference = known if known is not None else whole
    if not ok:
        if source in world.intact() and whole is not None and last < len(whole):
            raise Violation(f"S3 UploadPartCopy of {source!r}, which nothing touched: {result!r}")
        return False, None
    if reference is not None and last >= len(reference):
        raise Violation(f"S3 UploadPartCopy copied bytes={first}-{last} of {len(reference)}")
    return True, None if reference is None else reference[first : last + 1]


def s3_multipart(world: World, data: st.DataObject) -> None:
    """A multipart upload to A: a part sent, perhaps a part copied from a range of any object
    of A (UploadPartCopy reads through the core's range reader), then Complete or Abort. The
    object Complete makes holds exactly the parts' bytes: the part sent, and the copied
    range's verified bytes; an aborted upload is gone."""
    target = data.draw(st.sampled_from(HONEST_NAMES), label="target")
    copies = data.draw(st.booleans(), label="copies a part")
    seed = data.draw(st.integers(0, 2**30), label="seed")
    # every part but the last holds at least MIN_PART_SIZE bytes, as S3 asks
    sent = (
        random_bytes(32768, seed) * (MIN_PART_SIZE // 32768)
        if copies
        else random_bytes(data.draw(st.integers(0, 9000), label="size"), seed)
    )
    ok, created = s3_call(
        world,
        f"S3 CreateMultipartUpload {target!r}",
        lambda: world.s3.create_multipart_upload(Bucket=world.bucket, Key=target),
    )
    if not ok:
        raise Violation(f"S3 CreateMultipartUpload of {target!r} failed: {created!r}")
    upload = {"Bucket": world.bucket, "Key": target, "UploadId": created["UploadId"]}
    ok, part = s3_call(
        world,
        f"S3 UploadPart {target!r} ({len(sent)} bytes)",
        lambda: world.s3.upload_part(**upload, PartNumber=1, Body=sent),
    )
    if not ok:
        raise Violation(f"S3 UploadPart of {target!r} failed: {part!r}")
    parts = [{"PartNumber": 1, "ETag": part["ETag"]}]
    expected: bytes | None = sent
    if copies:
        copied, holds = _s3_part_copy(world, data, upload)
        if copied:
            ok, listed = s3_call(world, "S3 ListParts", lambda: world.s3.list_parts(**upload))
            if not ok:
                raise Violation(f"S3 ListParts of an open upload failed: {listed!r}")
            parts = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in listed["Parts"]]
            expected = None if holds is None else sent + holds
    if not copies or data.draw(st.booleans(), label="completes"):
        _s3_complete(world, target, upload, parts, expected)
        return
    ok, result = s3_call(
        world,
        f"S3 AbortMultipartUpload {target!r}",
        lambda: world.s3.abort_multipart_upload(**upload),
    )
    if not ok:
        raise Violation(f"S3 AbortMultipartUpload of {target!r} failed: {result!r}")
    ok, result = s3_call(world, "S3 ListParts (aborted)", lambda: world.s3.list_parts(**upload))
    if ok or _s3_code(result) != "NoSuchUpload":
        raise Violation(f"an aborted upload of {target!r} still answers ListParts: {result!r}")


def _s3_complete(
    world: World,
    target: str,
    upload: dict[str, str],
    parts: list[dict[str, Any]],
    expected: bytes | None,
) -> None:
    """Complete, then the object read back through the core: the parts' bytes, exactly."""
    info = _s3_write(
        world,
        "CompleteMultipartUpload",
        target,
        lambda: world.s3.complete_multipart_upload(**upload, MultipartUpload={"Parts": parts}),
    )
    if info is None:
        return
    _check_chunks("S3 CompleteMultipartUpload", info)
    ok, stored = world.call(f"get_bytes({target!r})", lambda: world.a.get_bytes(target))
    if not ok:
        raise Violation(f"the object CompleteMultipartUpload made of {target!r}: {stored!r}")
    world.check_bytes("S3 CompleteMultipartUpload", stored)
    if expected is None:  # a copied range of a source whose content is not known
        world.honest.pop(target, None)
        return
    if stored != expected:
        raise Violation(
            f"CompleteMultipartUpload made {target!r} of {len(stored)} bytes that are not its"
            f" parts' {len(expected)}"
        )
    world.remember_put(target, stored, info)


OPERATIONS = [
    Operation(f.__name__, f)
    for f in (
        get_bytes,
        get_range,
        open_range,
        fs_open_seek_read,
        fs_cat_file,
        fs_cat_ranges,
        get_info,
        list_objects,
        iter_list,
        fs_find,
        status,
        changes,
        watch_initial,
        watch_live,
        cli_sync,
        fs_get_recursive,
        copy,
        honest_put,
        put_if_absent,
        fs_pipe,
        delete,
        fs_rm_recursive,
        compact,
        lifecycle_apply,
        s3_get,
        s3_get_range,
        s3_head,
        s3_list,
        s3_put,
        s3_copy,
        s3_delete,
        s3_delete_batch,
        s3_multipart,
    )
]

# the forked writer is a row of its own module (natsobj's state across a fork)
from tests.adversary.forked import forked_put  # noqa: E402

OPERATIONS.append(Operation(forked_put.__name__, forked_put))

# Pipes' sealed objects are rows of their own module (natsobj.pipes)
from tests.adversary.pipes_rows import pipes_put, pipes_read  # noqa: E402

OPERATIONS.extend(Operation(row.__name__, row) for row in (pipes_put, pipes_read))

# the version rows are of their own module (docs/versioning.md: one version's operations never
# serve or change another's bytes)
from tests.adversary.version_rows import VERSION_ROWS  # noqa: E402

OPERATIONS.extend(Operation(row.__name__, row) for row in VERSION_ROWS)
