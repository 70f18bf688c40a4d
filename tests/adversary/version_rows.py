"""The adversary's version rows (docs/versioning.md): A is versioned (Enabled or Suspended,
as a row sets it), every honest write's version is remembered by its id (``World.versions``),
and each face's read, removal and restore of one version is held to the invariant that no
operation on one version serves or changes another's bytes:

- a read of version V (the core's ``get``/``get_range``/``open_range`` with ``version=``,
  fsspec's ``cat_file``/``open`` with ``version_id``, ``natsobj cat --version-id``, the
  gateway's GetObject with ``versionId``, whole or a range) returns only bytes of V where V's
  bytes are known, no byte of B, and nothing of a version listed lost;
- a removal of V for good (the core's ``delete(version=)``, fsspec's ``rm_file``,
  ``natsobj rm --version-id``, the gateway's DeleteObject with ``versionId``) leaves V
  unreadable and every other version reading as before;
- a restore of V (``natsobj restore``, fsspec's ``cp_file`` from ``?versionId=``, the
  gateway's CopyObject from a ``versionId`` over the key) makes the current version V's
  bytes.

Versions are drawn from ``versions()``, which a writer's planted records feed: ids no natsobj
write makes (not 22 letters and digits) are left to the core's rows, since every face refuses
them before a request is made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fsspec
from click.testing import CliRunner
from hypothesis import strategies as st

from natsobj.aio.copy import copy_object
from natsobj.aio.ranges import byte_range
from natsobj.cli import cli
from natsobj.parsing import parse_version_id
from natsobj.versioning import ObjectVersion
from tests.adversary.attacks import HONEST_NAMES
from tests.adversary.s3_calls import s3_call
from tests.adversary.world import Violation, World, random_bytes

VERSIONINGS = ("Enabled", "Suspended")


def _fs(world: World) -> Any:
    return fsspec.filesystem("nats", url=world.url, version_aware=True)


def _faceable(version: ObjectVersion) -> bool:
    try:
        return parse_version_id(version.version_id) is not None
    except ValueError:
        return False


def _listed(world: World) -> list[ObjectVersion]:
    ok, found = world.call("versions()", lambda: world.a.versions())
    if not ok:
        raise Violation(f"versions() of the bucket failed: {found!r}")
    for version in found:
        world.check_bytes("versions()", repr(version.info.as_dict()).encode())
    return [v for v in found if _faceable(v)]


def _draw(world: World, data: st.DataObject, *, markers: bool = False) -> ObjectVersion | None:
    """A listed version, chosen by a draw whose range never depends on what the server lists
    (hypothesis needs the same draws for the same choices; a listing's length may not be, as
    expiring chunks go). Each row draws everything else before it, for the same reason."""
    index = data.draw(st.integers(0, 255), label="version")
    found = [v for v in _listed(world) if markers or not v.delete_marker]
    return found[index % len(found)] if found else None


def _check(
    world: World,
    label: str,
    version: ObjectVersion,
    outcome: tuple[bool, Any],
    span: tuple[int | None, int | None] | None = None,
) -> None:
    """A read of ``version``: only its own bytes (the ``span`` of them), never a lost one's."""
    ok, result = outcome
    if not ok:
        return
    where = f"{label} of version {version.version_id} of {version.name!r}"
    if version.lost:
        raise Violation(f"{where} returned {len(result)} bytes of a version listed lost")
    world.check_bytes(label, result)
    known = world.versions.get(version.version_id)
    if known is None:
        return
    start, end = byte_range(len(known), *span) if span else (0, len(known))
    if result != known[start:end]:
        raise Violation(
            f"{where} {span or ''} returned {len(result)} bytes that are not the version's"
            f" [{start}:{end}]: {result[:24]!r} vs {known[start : start + 24]!r}"
        )


def _span(data: st.DataObject) -> tuple[int | None, int | None]:
    point = st.one_of(st.none(), st.integers(-300, 25_000))
    return data.draw(point, label="start"), data.draw(point, label="end")


def _cli(world: World, *args: str) -> tuple[bool, Any]:
    """``natsobj ARGS`` in-process: (exit 0, its stdout bytes), or (False, its error line);
    an untyped failure is a violation."""
    label = "natsobj " + " ".join(args[:1])
    ok, result = world.call_blocking(
        label, lambda: CliRunner().invoke(cli, ["--url", world.url, *args])
    )
    assert ok, result
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise Violation(f"{label} crashed: {result.exception!r}")
    if "unexpected" in result.stderr:
        raise Violation(f"{label} failed with an untyped error: {result.stderr}")
    return (True, result.stdout_bytes) if result.exit_code == 0 else (False, result.stderr)


# -- the bucket's state ------------------------------------------------------------------------


def set_versioning(world: World, data: st.DataObject) -> None:
    state = data.draw(st.sampled_from(VERSIONINGS), label="versioning")
    ok, result = world.call(f"set_versioning({state})", lambda: world.a.set_versioning(state))
    if not ok and not world.rules_attacked:
        raise Violation(f"set_versioning({state}) of A failed: {result!r}")


def versioned_put(world: World, data: st.DataObject) -> None:
    """An honest put in A keeping versions: the version it replaces is kept (so the reads below
    have kept versions to read, not only current ones)."""
    name = data.draw(st.sampled_from(HONEST_NAMES), label="honest name")
    payload = random_bytes(data.draw(st.integers(0, 70_000)), data.draw(st.integers(0, 2**30)))
    enabled = world.call("set_versioning(Enabled)", lambda: world.a.set_versioning("Enabled"))
    ok, info = world.call(f"put({name!r})", lambda: world.a.put(name, payload, chunk_size=4096))
    if not (ok and enabled[0]):
        if not world.rules_attacked:
            raise Violation(f"a versioned put of {name!r} failed: {info!r} {enabled!r}")
        return
    world.check_info("versioned put", info)
    world.remember_put(name, payload, info)


# -- reads ------------------------------------------------------------------------------------


def version_get(world: World, data: st.DataObject) -> None:
    if (version := _draw(world, data)) is None:
        return

    async def read() -> bytes:
        async with world.a.get(version.name, version=version.version_id) as reader:
            return bytes(await reader.read())

    _check(world, "get(version=)", version, world.call(f"get({version.name!r}, version)", read))


def version_get_range(world: World, data: st.DataObject) -> None:
    span = _span(data)
    if (version := _draw(world, data)) is None:
        return
    start = 0 if span[0] is None else span[0]
    outcome = world.call(
        f"get_range({version.name!r}, {span}, version)",
        lambda: world.a.get_range(version.name, start, span[1], version=version.version_id),
    )
    _check(world, "get_range(version=)", version, outcome, (start, span[1]))


def version_open_range(world: World, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, 20_000), label="offset")
    count = data.draw(st.integers(-1, 300) | st.integers(-1, 20_000), label="count")
    if (version := _draw(world, data)) is None:
        return

    async def seek_read() -> bytes:
        reader = await world.a.open_range(version.name, version=version.version_id)
        try:
            reader.seek(offset)
            return bytes(await reader.read(count))
        finally:
            await reader.close()

    outcome = world.call(f"open_range({version.name!r}, version)", seek_read)
    span = (offset, None if count < 0 else offset + count)
    _check(world, "open_range(version=)", version, outcome, span)


def fs_version_cat_file(world: World, data: st.DataObject) -> None:
    span = _span(data)
    in_path = data.draw(st.booleans(), label="?versionId= in the path")
    if (version := _draw(world, data)) is None:
        return
    path = f"{world.bucket}/{version.name}"

    def cat() -> bytes:
        if in_path:
            return bytes(_fs(world).cat_file(f"{path}?versionId={version.version_id}", *span))
        return bytes(_fs(world).cat_file(path, *span, version_id=version.version_id))

    outcome = world.call_blocking(f"fs.cat_file({version.name!r}, {span}, version)", cat)
    _check(world, "fsspec cat_file(version_id=)", version, outcome, span)


def fs_version_open(world: World, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, 20_000), label="offset")
    count = data.draw(st.integers(0, 300) | st.integers(0, 20_000), label="count")
    if (version := _draw(world, data)) is None:
        return

    def seek_read() -> bytes:
        path = f"{world.bucket}/{version.name}"
        with _fs(world).open(path, "rb", version_id=version.version_id) as handle:
            handle.seek(offset)
            return bytes(handle.read(count))

    outcome = world.call_blocking(f"fs.open({version.name!r}, version_id)", seek_read)
    _check(world, "fsspec open(version_id=)", version, outcome, (offset, offset + count))


def cli_cat_version(world: World, data: st.DataObject) -> None:
    if (version := _draw(world, data)) is None:
        return
    outcome = _cli(world, "cat", "--version-id", version.version_id, world.bucket, version.name)
    _check(world, "natsobj cat --version-id", version, outcome)


def s3_version_get(world: World, data: st.DataObject) -> None:
    """GetObject with ``versionId``, whole or ``Range: bytes=first-last``."""
    first = data.draw(st.integers(0, 25_000), label="first")
    length = data.draw(st.none() | st.integers(1, 300) | st.integers(1, 25_000), label="length")
    if (version := _draw(world, data)) is None:
        return
    request: dict[str, str] = {"VersionId": version.version_id}
    if length is not None:
        request["Range"] = f"bytes={first}-{first + length - 1}"

    def read() -> bytes:
        answer = world.s3.get_object(Bucket=world.bucket, Key=version.name, **request)
        return bytes(answer["Body"].read())

    outcome = s3_call(world, f"S3 GetObject {version.name!r} {request}", read)
    span = None if length is None else (first, first + length)
    _check(world, "S3 GetObject versionId", version, outcome, span)


# -- writes -----------------------------------------------------------------------------------


def _remove_with(world: World, via: str, version: ObjectVersion) -> tuple[bool, Any]:
    name, vid = version.name, version.version_id
    if via == "core":
        return world.call(f"delete({name!r}, version)", lambda: world.a.delete(name, version=vid))
    if via == "fsspec":
        return world.call_blocking(
            f"fs.rm_file({name!r}, version_id)",
            lambda: _fs(world).rm_file(f"{world.bucket}/{name}", version_id=vid),
        )
    if via == "s3":
        return s3_call(
            world,
            f"S3 DeleteObject {name!r} versionId",
            lambda: world.s3.delete_object(Bucket=world.bucket, Key=name, VersionId=vid),
        )
    return _cli(world, "rm", "--version-id", vid, world.bucket, name)


def remove_version(world: World, data: st.DataObject) -> None:
    """One version removed for good: it is no longer read, and the others read as before."""
    via = data.draw(st.sampled_from(["core", "fsspec", "cli", "s3"]), label="through")
    if (version := _draw(world, data, markers=True)) is None:
        return
    ok, _ = _remove_with(world, via, version)
    if not ok:
        return
    name, vid = version.name, version.version_id
    if version.is_latest:
        world.honest.pop(name, None)  # the version before it is current now, or none
    gone = world.call("get_info(removed version)", lambda: world.a.get_info(name, version=vid))
    if gone[0]:
        raise Violation(f"version {vid} of {name!r} was removed ({via}) and is still there")
    for other in _listed(world)[:4]:
        if other.delete_marker:
            continue

        async def read(other: ObjectVersion = other) -> bytes:
            async with world.a.get(other.name, version=other.version_id) as reader:
                return bytes(await reader.read())

        _check(world, f"get(version=) after removing {vid}", other, world.call("get", read))


def _restore_with(world: World, via: str, version: ObjectVersion) -> tuple[bool, Any]:
    name, vid = version.name, version.version_id
    if via == "fsspec":
        path = f"{world.bucket}/{name}"
        return world.call_blocking(
            f"fs.cp_file({name!r}?versionId, {name!r})",
            lambda: _fs(world).cp_file(f"{path}?versionId={vid}", path),
        )
    if via == "core":
        return world.call(
            f"copy_object({name!r}, version)",
            lambda: copy_object(world.a, name, world.a, name, version=vid),
        )
    if via == "s3":
        source = {"Bucket": world.bucket, "Key": name, "VersionId": vid}
        return s3_call(
            world,
            f"S3 CopyObject {name!r} from versionId",
            lambda: world.s3.copy_object(Bucket=world.bucket, Key=name, CopySource=source),
        )
    return _cli(world, "restore", "--version-id", vid, world.bucket, name)


def restore_version(world: World, data: st.DataObject) -> None:
    """A version copied over the current one: the current one then reads as that version."""
    via = data.draw(st.sampled_from(["core", "fsspec", "cli", "s3"]), label="through")
    if (version := _draw(world, data)) is None:
        return
    ok, _ = _restore_with(world, via, version)
    name = version.name
    if not ok:
        return
    if version.lost:
        raise Violation(f"restore ({via}) of {name!r} copied version {version.version_id}, lost")
    known = world.versions.get(version.version_id)
    ok, info = world.call("get_info", lambda: world.a.get_info(name))
    got = world.call("get_bytes", lambda: world.a.get_bytes(name)) if ok else (False, None)
    if not got[0] or known is None:
        world.honest.pop(name, None)  # no longer a promise of the model
        return
    if got[1] != known:
        raise Violation(
            f"{name!r} restored ({via}) from version {version.version_id} reads"
            f" {len(got[1])} bytes that are not the version's {len(known)}"
        )
    world.remember_put(name, known, info)


VERSION_ROWS: list[Callable[[World, st.DataObject], None]] = [
    set_versioning,
    versioned_put,
    version_get,
    version_get_range,
    version_open_range,
    fs_version_cat_file,
    fs_version_open,
    cli_cat_version,
    s3_version_get,
    remove_version,
    restore_version,
]
