"""Store access shared by the driver-side planning and the executor tasks.

Every task reaches the server from the pickled options, through the process's shared
connection (``natsobj.shared``): Spark reuses its Python workers for task after task, and a
connection per task would cost a TCP and NATS handshake per part (docs/performance.md). Stores
are bound per use (one stream info), so a bucket deleted or recreated
between queries is seen as it is now.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import natsobj
from natsobj.aio import lifecycle_apply
from natsobj.aio.put_modes import create_sequence
from natsobj.errors import (
    BadObjectName,
    ExpiryNotEnabled,
    NotConnected,
    ObjectChanged,
    ObjectExists,
    ObjectNotFound,
)
from natsobj.lifecycle import LifecycleRule
from natsobj.model import ObjectInfo
from natsobj.names import meta_subject
from natsobj.paths import as_dir
from natsobj.shared import shared_client
from natsobj.spark.errors import DatasetNotFound, EmbeddedServerUnreachable
from natsobj.spark.file_options import AUTO, OBJECT_FORMATS, TEXT, format_of
from natsobj.spark.manifest import (
    WRITE_ID_KEY,
    Manifest,
    Part,
    abort_marker,
    manifest_name,
)
from natsobj.spark.options import SourceOptions
from natsobj.spark.selection import select_listed
from natsobj.sync import run

log = logging.getLogger("natsobj.spark")

# No task of an aborted write runs this long after its abort; its marker can then go.
MARKER_TTL = timedelta(days=1)


class NoManifestWarning(UserWarning):
    """The prefix holds Parquet objects but no manifest: read through a listing."""


@contextlib.contextmanager
def open_store(opts: SourceOptions, *, create: bool = False) -> Iterator[natsobj.ObjectStore]:
    """The options' bucket; with ``create`` a missing one is made with the bucket_ options."""
    client = _connect(opts)
    if create:
        yield client.ensure_store(opts.bucket_config)
    else:
        yield client.store(opts.bucket)


def _connect(opts: SourceOptions) -> natsobj.Client:
    """The process's connection; a task that cannot reach the driver's embedded server says
    so at once."""
    try:
        return shared_client(opts.settings)
    except NotConnected as exc:
        if opts.embedded is None:
            raise
        raise EmbeddedServerUnreachable(
            f"this Spark process on host {socket.gethostname()!r} cannot reach "
            f"{opts.settings.servers[0]}, the driver's embedded NATS server (option url "
            f"{opts.embedded!r})",
            bucket=opts.bucket,
        ) from exc


def manifest_for_update(store: natsobj.ObjectStore, prefix: str) -> tuple[Manifest | None, int]:
    """The manifest a commit replaces and the ``expected_sequence`` of the commit's put: the
    version read (its content and sequence from one read), or none and the core's
    put-if-absent sequence (``natsobj.aio.put_modes``). ObjectChanged when the manifest goes
    between the two looks: the commit then starts over."""
    name = manifest_name(prefix)
    try:
        return None, run(create_sequence(store.aio, name))
    except ObjectExists:
        pass
    try:
        with store.get(name) as reader:
            data, sequence = reader.read(), reader.info.sequence or 0
    except ObjectNotFound:
        raise ObjectChanged(
            "the manifest was deleted while a commit read it", bucket=store.bucket, name=name
        ) from None
    return Manifest.from_json(data, bucket=store.bucket, name=name), sequence


def read_manifest(store: natsobj.ObjectStore, prefix: str) -> Manifest | None:
    name = manifest_name(prefix)
    try:
        data = store.get_bytes(name)
    except ObjectNotFound:
        return None
    return Manifest.from_json(data, bucket=store.bucket, name=name)


def objects_under(store: natsobj.ObjectStore, prefix: str) -> list[ObjectInfo]:
    """Current objects whose names start with ``prefix/`` (all objects for an empty prefix)."""
    return store.list(prefix=as_dir(prefix))  # sorted by name


def is_aborted(store: natsobj.ObjectStore, prefix: str, write_id: str) -> bool:
    try:
        store.get_info(abort_marker(prefix, write_id))
    except ObjectNotFound:
        return False
    return True


def strays(infos: list[ObjectInfo], prefix: str, write_id: str, keep: set[str]) -> list[str]:
    """What a commit or abort deletes besides replaced parts, of the objects under ``prefix``
    (``objects_under``): parts of this write not in ``keep`` (failed or speculative attempts),
    parts of aborted writes stored after their abort swept, and abort markers old enough that
    no task of theirs can still be running."""
    marker_dir = abort_marker(prefix, "")
    markers = {i.name.removeprefix(marker_dir): i for i in infos if i.name.startswith(marker_dir)}
    dead = {write_id, *markers}
    expired = datetime.now(UTC) - MARKER_TTL
    stray = [
        i.name
        for i in infos
        if i.metadata.get(WRITE_ID_KEY) in dead
        and i.name != manifest_name(prefix)
        and i.name not in keep
    ]
    stray += [m.name for m in markers.values() if m.mtime is not None and m.mtime < expired]
    return stray


def delete_quietly(store: natsobj.ObjectStore, names: Iterable[str]) -> int:
    """Delete what is there; a missing object is already what we want, and so is a name no
    object can have (``BadObjectName``: a retained name too long to be made). Returns the
    count."""
    deleted = 0
    for name in names:
        try:
            store.delete(name)
            deleted += 1
        except (ObjectNotFound, BadObjectName):
            continue
    return deleted


def move_quietly(store: natsobj.ObjectStore, moves: Iterable[tuple[str, str]]) -> int:
    """Rename each object (``update_meta``: its meta record moves, its chunks stay, so a read
    already streaming it goes on). One another commit moved first is left as it is; one a
    crash left under both names (a rename writes the new record, then purges the old) loses
    its old record. One whose new name is too long for the server stays, logged. Returns how
    many moved."""
    moved = 0
    for name, target in moves:
        try:
            store.update_meta(name, new_name=target)
        except (ObjectNotFound, ObjectChanged):
            continue  # moved meanwhile by another commit
        except ObjectExists:
            _forget_half_moved(store, name, target)
            continue
        except BadObjectName as exc:
            log.warning("natsobj: cannot move %r of bucket %r: %s", name, store.bucket, exc)
            continue
        moved += 1
    return moved


def _forget_half_moved(store: natsobj.ObjectStore, name: str, target: str) -> None:
    """Purge ``name``'s record, not its chunks, when ``target`` names the same chunks (a
    rename cut short); an object of its own at ``target`` is left, and so is ``name``."""
    try:
        here, there = store.get_info(name), store.get_info(target)
    except ObjectNotFound:
        return
    if here.nuid and here.nuid == there.nuid:
        run(store.aio.bucket_stream.purge(meta_subject(store.bucket, name)))
        return
    log.warning(
        "natsobj: cannot move %r of bucket %r to %r: another object is there; it stays",
        name,
        store.bucket,
        target,
    )


def expire_quietly(store: natsobj.ObjectStore, names: Iterable[str], ttl: timedelta) -> int:
    """Give each object ``ttl`` from now by the core's restamp (``natsobj.aio.lifecycle_apply``: its
    bytes put again, checked against its digest, same content, as a compare-and-swap on the
    version read, so one changed or gone meanwhile is left as it is). A bucket without
    per-object TTLs is logged and nothing is changed. Returns how many now expire."""
    why = LifecycleRule("**", ttl)  # the option superseded_ttl, as a rule for every name
    planned = []
    for name in names:
        try:
            planned.append(lifecycle_apply.Restamp(store.get_info(name), why, ttl))
        except ObjectNotFound:
            continue
    try:
        done = run(lifecycle_apply.apply(store.aio, planned))
    except ExpiryNotEnabled as exc:
        log.warning(
            "natsobj: superseded parts in bucket %r cannot be given a TTL (%s); they are "
            "deleted by the first commit after their expires_at instead",
            store.bucket,
            exc.message,
        )
        return 0
    return sum(r.done for r in done)


@dataclass(frozen=True)
class TablePlan:
    """What a read is planned on: the manifest, or a listing of foreign Parquet objects."""

    parts: tuple[Part, ...]
    manifest: Manifest | None


def load_plan(store: natsobj.ObjectStore, opts: SourceOptions) -> TablePlan:
    manifest = read_manifest(store, opts.prefix)
    if manifest is not None:
        return TablePlan(manifest.parts, manifest)
    listed = tuple(
        Part(info.name, -1, info.size, info.digest)
        for info in select_listed(objects_under(store, opts.prefix), opts)
    )
    if not listed:
        single = _single_object(store, opts)
        if single is not None:
            return TablePlan((single,), None)
        raise DatasetNotFound(
            f"dataset {opts.prefix!r} not found: no object of that name, no "
            f"{manifest_name(opts.prefix)!r} and no {_wanted(opts)} objects under it",
            bucket=opts.bucket,
        )
    message = (
        f"bucket {opts.bucket!r}, prefix {opts.prefix!r} has no {manifest_name(opts.prefix)!r}: "
        f"reading the {len(listed)} {_kind(listed, opts)} objects found by listing. A listing "
        "can include parts of an unfinished write; write the dataset with format('natsobj') "
        "for atomic reads."
    )
    warnings.warn(message, NoManifestWarning, stacklevel=2)
    log.warning(message)
    return TablePlan(listed, None)


def _single_object(store: natsobj.ObjectStore, opts: SourceOptions) -> Part | None:
    """``load("lake/with/pandas.parquet")``: one object is a dataset of one, as
    ``spark.read.parquet`` reads one file (it is one put, so no listing caveat applies)."""
    if not opts.prefix or opts.glob:
        return None
    try:
        info = store.get_info(opts.prefix)
    except ObjectNotFound:
        return None
    if info.is_link or format_of(info.name, opts.object_format) is None:
        return None
    return Part(info.name, -1, info.size, info.digest)


def _kind(parts: tuple[Part, ...], opts: SourceOptions) -> str:
    """``.parquet``, ``.csv``, ``.json`` or ``text``: what the listed objects hold."""
    fmt = format_of(parts[0].name, opts.object_format)
    return TEXT if fmt == TEXT else f".{fmt}"


def _wanted(opts: SourceOptions) -> str:
    auto = opts.object_format == AUTO
    shown = [f for f in OBJECT_FORMATS if f != AUTO] if auto else [opts.object_format]
    return "/".join(shown) + (f" matching glob {opts.glob!r}" if opts.glob else "")
