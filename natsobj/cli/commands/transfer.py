"""``natsobj put``, ``get``, ``cat`` and ``cp``: files, directories (-r), stdin/stdout
('-'), and object to object across buckets.

Data always flows chunk by chunk, so memory stays bounded whatever the object size; a file
being written appears under its final name only after the store verified its digest (or,
for ``--range``, once every byte of the range arrived: a range has no digest to check).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import click

from natsobj import paths
from natsobj.aio.copy import copied_by_prefix, copy_object
from natsobj.aio.ranges import byte_range as object_range
from natsobj.aio.sources import Readable
from natsobj.cli import render, tree
from natsobj.cli.exits import UsageProblem
from natsobj.cli.filters import FilteredCommand, Filters, filter_options
from natsobj.cli.operands import nats_location, object_operands
from natsobj.cli.params import (
    ChunkSize,
    content_type_option,
    dry_run_option,
    header_option,
    metadata_option,
    progress_option,
    quiet_option,
    range_option,
    read_options,
    table_option,
    with_content_type,
)
from natsobj.cli.progress import CountingReader, Meter, meter
from natsobj.cli.report import Report
from natsobj.cli.session import Session, pass_session
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.local.files import open_target, replacing
from natsobj.local.mirror import local_files
from natsobj.model import ObjectInfo
from natsobj.operation_options import ReadOptions
from natsobj.paths import nats_url
from natsobj.sync import ObjectStore, run

STDIO = "-"
RANGE_PIECE = 8 * 1024 * 1024  # a range is fetched and written this much at a time


def _stdin_size(stream: BinaryIO) -> int | None:
    """The total for the progress bar when stdin is a redirected regular file."""
    with contextlib.suppress(OSError, ValueError):
        status = os.fstat(stream.fileno())
        if stat.S_ISREG(status.st_mode):
            return status.st_size
    return None


def _put_stream(
    put_one: Callable[[str, Readable], ObjectInfo],
    name: str,
    stream: BinaryIO,
    total: int | None,
    bar: Meter,
) -> ObjectInfo:
    with bar.task(name, total) as advance:
        return put_one(name, CountingReader(stream, advance))


def _summary(verb: str, info: ObjectInfo) -> str:
    return (
        f"{verb} {info.bucket}/{render.shell_escape(info.name)}  {render.size(info.size)}  "
        f"{info.chunks} chunk{'' if info.chunks == 1 else 's'}  {render.short_digest(info.digest)}"
        + (f"  expires {render.when(info.expires)}" if info.expires else "")
    )


def object_name(key: str, local: str) -> str:
    """An upload's object name, as ``aws s3 cp`` forms a key: a destination that is a prefix
    (empty, or ending in '/') gets the file's name appended."""
    if key and not key.endswith(paths.SEP):
        return key
    if local == STDIO:
        raise UsageProblem("name the object to store stdin as: nats://BUCKET/NAME")
    return key + Path(local).name


def _check_local_source(path: str, recursive: bool) -> Path:
    source = Path(path)
    if recursive != (path != STDIO and source.is_dir()):
        raise UsageProblem(
            f"{path} is a directory: add -r to store everything below it"
            if not recursive
            else f"-r needs a directory, and {path} is not one"
        )
    return source


def upload(
    store: ObjectStore,
    name: str,
    path: str,
    *,
    recursive: bool,
    filters: Filters,
    report: Report,
    put_one: Callable[[str, Readable], ObjectInfo],
) -> None:
    """``put`` and ``cp`` from a local path: a file, stdin, or with ``recursive`` a directory
    below the prefix ``name``."""
    source = _check_local_source(path, recursive)
    bar = report.bar
    if path == STDIO:
        key = object_name(name, path)
        if report.dry_run:
            report(f"upload: - to {nats_url(store.bucket, key)}")
            return
        stdin = sys.stdin.buffer
        report(_summary("put", _put_stream(put_one, key, stdin, _stdin_size(stdin), bar)))
        return
    if recursive:
        files = [
            (f, tree.join_name(name, rel)) for f, rel in local_files(source) if filters.wanted(rel)
        ]
    else:
        files = [(source, object_name(name, path))]
    for file, key in files:
        if report.dry_run:
            report(f"upload: {render.shell_escape(str(file))} to {nats_url(store.bucket, key)}")
            continue
        with file.open("rb") as stream:
            info = _put_stream(put_one, key, stream, file.stat().st_size, bar)
        report(_summary("put", info))


def put_options(command: Callable[..., Any]) -> Any:
    """The options every upload takes (``put`` and ``cp`` from a local path)."""
    for option in reversed(
        [
            click.option("--description", "-d", help="Description stored with the object."),
            header_option("Header stored with the object, repeatable."),
            metadata_option("Metadata stored with the object, repeatable."),
            content_type_option(),
            click.option(
                "--chunk-size",
                type=ChunkSize(),
                metavar="SIZE",
                help="Chunk size: bytes, or 128KiB, 1MiB (at least 512 bytes).",
            ),
            table_option(
                "put",
                "ttl",
                help_text="Expire the object this long after the put (7d, 12h, 90s), on the"
                " server; 'never' keeps it whatever the bucket's lifecycle rules say. Default:"
                " the rules.",
            ),
        ]
    ):
        command = option(command)
    return command


def _put_one(store: ObjectStore, options: dict[str, Any]) -> Callable[[str, Readable], ObjectInfo]:
    return functools.partial(
        store.put,
        description=options["description"],
        headers=with_content_type(options["headers"], options["content_type"]),
        metadata=options["metadata"],
        chunk_size=options["chunk_size"],
        ttl=options["ttl"],
    )


@click.command("put", cls=FilteredCommand)
@object_operands(
    "bucket",
    "name",
    "path",
    required=3,
    types={"path": click.Path(exists=True, allow_dash=True, path_type=str)},
)
@click.option("--recursive", "-r", is_flag=True, help="PATH is a directory; NAME is the prefix.")
@put_options
@filter_options()
@dry_run_option()
@quiet_option()
@progress_option()
@pass_session
def put(
    session: Session,
    bucket: str,
    name: str,
    path: str,
    recursive: bool,
    filters: Filters,
    dry_run: bool,
    quiet: bool,
    progress: bool | None,
    **options: Any,
) -> None:
    """Store PATH (file, '-' for stdin, directory with -r) as NAME.

    A NAME that is empty or ends in '/' is a prefix: the file's name is added to it."""
    _check_local_source(path, recursive)
    store = session.store(bucket)
    with meter(progress and not dry_run) as bar:
        upload(
            store,
            name,
            path,
            recursive=recursive,
            filters=filters,
            report=Report(bar, quiet, dry_run),
            put_one=_put_one(store, options),
        )


def _copy_out(
    store: ObjectStore,
    name: str,
    out: BinaryIO,
    bar: Meter,
    reading: ReadOptions,
    version: str | None = None,
) -> ObjectInfo:
    with (
        store.get(name, **reading, version=version) as reader,
        bar.task(name, reader.info.size) as advance,
    ):
        for chunk in reader:
            out.write(chunk)
            advance(len(chunk))
        return reader.info


def _get_to_file(
    store: ObjectStore,
    name: str,
    target: Path,
    bar: Meter,
    reading: ReadOptions,
    within: Path | None = None,
    version: str | None = None,
) -> ObjectInfo:
    """The core writes beside the target and renames once the digest matches; ``within``,
    the directory ``-r`` fills, is never left (``ObjectStore.get_file``)."""
    with bar.task(name, store.get_info(name, version=version).size) as advance:
        return store.get_file(
            name,
            target,
            progress=advance,
            **reading,
            within=within,
            version=version,
        )


def _copy_range(
    store: ObjectStore,
    name: str,
    requested: tuple[int, int | None],
    out: BinaryIO,
    bar: Meter,
    reading: ReadOptions,
    version: str | None = None,
) -> tuple[ObjectInfo, int, int]:
    """Write bytes ``requested`` (the core's convention, see ``ByteRange``) of NAME (of
    ``version``, else the current one) to ``out``, a piece at a time; returns the version
    read and the first and last+1 offsets. A start at or past the end is refused, as an HTTP
    server answers 416."""
    opened = store.open_range(name, **reading, version=version)
    with contextlib.closing(opened) as reader:
        size = reader.size
        if requested[0] >= size:
            raise UsageProblem(
                f"range not satisfiable: {render.shell_escape(name)} has {size} bytes"
            )
        first, last = object_range(size, *requested)
        with bar.task(name, last - first) as advance:
            reader.seek(first)
            while reader.tell() < last:
                piece = reader.read(min(RANGE_PIECE, last - reader.tell()))
                out.write(piece)
                advance(len(piece))
        return reader.info, first, last


def _range_to_file(
    store: ObjectStore,
    name: str,
    requested: tuple[int, int | None],
    destination: Path,
    bar: Meter,
    reading: ReadOptions,
    version: str | None = None,
) -> tuple[ObjectInfo, int, int]:
    """Written as the core's get_file writes (``natsobj.local.files.replacing``): beside
    ``destination``, renamed over it, with its mode, once every byte of the range arrived."""
    with (
        open_target(destination, bucket=store.bucket, name=name) as target,
        replacing(target) as handle,
    ):
        return _copy_range(store, name, requested, handle, bar, reading, version)


def _range_summary(info: ObjectInfo, first: int, last: int) -> str:
    shown = f"{first}-{last - 1}" if last > first else "nothing"
    return (
        f"got {info.bucket}/{render.shell_escape(info.name)}  bytes {shown}/{info.size}"
        f"  {render.size(last - first)}"
    )


def _shown_url(bucket: str, name: str, version: str | None) -> str:
    """An object's URL as a dry run prints it, with the version read when one was named."""
    return nats_url(bucket, name) + (f" (version {version})" if version else "")


def _perhaps_a_prefix(
    store: ObjectStore, name: str, error: ObjectNotFound, version: str | None = None
) -> NatsObjError:
    """``error`` for a missing ``name``, unless the name is a prefix of objects: then say
    how many and that -r fetches them (the listing is paid for only once the object is known
    to be missing). A version that is not there is that error, whatever is below the name."""
    if version is not None or not paths.as_dir(name):
        return error
    below = [
        i for i in store.list(prefix=paths.as_dir(name)) if not (i.link and i.link.is_bucket_link)
    ]
    if not below:
        return error
    count = len(below)
    return ObjectNotFound(
        f"no object named {name!r}: it is a prefix of {count} object{'' if count == 1 else 's'}",
        bucket=store.bucket,
        hint="Add -r to fetch everything below it.",
    )


def download(
    store: ObjectStore,
    name: str,
    path: str,
    *,
    recursive: bool,
    filters: Filters,
    report: Report,
    reading: ReadOptions,
    version: str | None = None,
) -> None:
    """``get`` and ``cp`` to a local path: one object (``version`` of it, else its current
    one) to a file, a directory or stdout, or with ``recursive`` every object below the prefix
    ``name`` into a directory."""
    bar = report.bar
    if path == STDIO:
        if recursive:
            raise UsageProblem("-r writes a directory tree and cannot write to stdout")
        if report.dry_run:
            report(f"download: {nats_url(store.bucket, name)} to -")
            return
        try:
            _copy_out(store, name, sys.stdout.buffer, bar, reading, version)
        except ObjectNotFound as error:
            raise _perhaps_a_prefix(store, name, error, version) from error
        sys.stdout.buffer.flush()
        return
    destination = Path(path)
    if not recursive:
        if destination.is_dir() or path.endswith(os.sep):
            destination = destination / name.rsplit(paths.SEP, 1)[-1]
        try:
            if report.dry_run:
                store.get_info(name, version=version)
                report(f"download: {_shown_url(store.bucket, name, version)} to {destination}")
                return
            got = _get_to_file(store, name, destination, bar, reading, version=version)
        except ObjectNotFound as error:
            raise _perhaps_a_prefix(store, name, error, version) from error
        report(f"{_summary('got', got)} -> {destination}")
        return
    wanted = [
        i for i in store.list(prefix=paths.as_dir(name)) if not (i.link and i.link.is_bucket_link)
    ]
    if not wanted:
        raise ObjectNotFound(
            f"no objects below {paths.as_dir(name) or 'the top'!r}", bucket=store.bucket
        )
    plan = tree.plan_local(wanted, name, store.bucket, filters.wanted)
    plan.warn()
    for relative, info in plan.targets.items():
        target = plan.path(destination, relative)
        if report.dry_run:
            report(f"download: {nats_url(store.bucket, info.name)} to {target}")
            continue
        with plan.one_object():
            got = _get_to_file(store, info.name, target, bar, reading, within=destination)
            report(f"{_summary('got', got)} -> {target}")
    plan.check()


@click.command("get", cls=FilteredCommand)
@object_operands(
    "bucket", "name", "path", required=3, types={"path": click.Path(allow_dash=True, path_type=str)}
)
@click.option(
    "--recursive", "-r", is_flag=True, help="NAME is a prefix; PATH the directory to fill."
)
@read_options()
@table_option("version", "version")
@range_option()
@filter_options()
@dry_run_option()
@quiet_option()
@progress_option()
@pass_session
def get(
    session: Session,
    bucket: str,
    name: str,
    path: str,
    recursive: bool,
    reading: ReadOptions,
    version: str | None,
    byte_range: tuple[int, int | None] | None,
    filters: Filters,
    dry_run: bool,
    quiet: bool,
    progress: bool | None,
) -> None:
    """Fetch NAME from BUCKET into PATH (file, directory or '-').

    Links are followed. The digest is verified; a mismatch exits with code 4. With --range
    only those bytes are fetched and written (no digest covers a range). With --version-id,
    that version of NAME (natsobj ls --versions shows them).
    """
    if recursive and byte_range is not None:
        raise UsageProblem("--range reads one object and cannot be used with -r")
    if recursive and version is not None:
        raise UsageProblem("--version-id names a version of one object and cannot be used with -r")
    store = session.store(bucket)
    with meter(progress and not dry_run) as bar:
        report = Report(bar, quiet, dry_run)
        if byte_range is None:
            download(
                store,
                name,
                path,
                recursive=recursive,
                filters=filters,
                report=report,
                reading=reading,
                version=version,
            )
            return
        if path == STDIO:
            _copy_range(store, name, byte_range, sys.stdout.buffer, bar, reading, version)
            sys.stdout.buffer.flush()
            return
        destination = Path(path)
        if destination.is_dir():
            destination = destination / name.rsplit(paths.SEP, 1)[-1]
        if dry_run:
            report(f"download: {_shown_url(bucket, name, version)} to {destination}")
            return
        ranged = _range_to_file(store, name, byte_range, destination, bar, reading, version)
        report(f"{_range_summary(*ranged)} -> {destination}")


@click.command("cat")
@object_operands("bucket", "name", required=2)
@read_options()
@table_option("version", "version")
@range_option()
@pass_session
def cat(
    session: Session,
    bucket: str,
    name: str,
    reading: ReadOptions,
    version: str | None,
    byte_range: tuple[int, int | None] | None,
) -> None:
    """Write NAME (or, with --range, those bytes of it) to stdout.

    Links are followed. A whole object's digest is verified (a mismatch exits with code 4
    after the bytes went out); a range fetches only the chunks holding it. With
    --version-id, that version of NAME.
    """
    store = session.store(bucket)
    out = sys.stdout.buffer
    with meter(False) as bar:
        if byte_range is None:
            _copy_out(store, name, out, bar, reading, version)
        else:
            _copy_range(store, name, byte_range, out, bar, reading, version)
    out.flush()


def _copy_within(
    source: ObjectStore,
    name: str,
    target: ObjectStore,
    dest_name: str | None,
    *,
    recursive: bool,
    filters: Filters,
    report: Report,
    reading: ReadOptions,
) -> None:
    """Object to object through ``copy_object`` (streamed through this client: NATS has no
    server-side copy): one, or with ``recursive`` every object below the prefix ``name``,
    below ``dest_name``. A ``dest_name`` of None keeps the name; an empty one or one ending
    in '/' is a prefix (``object_name``)."""
    if recursive:
        below = len(paths.as_dir(name))
        prefix = name if dest_name is None else dest_name
        pairs = [
            (info, tree.join_name(prefix, info.name[below:]))
            for info in paths.under(source.list(), name)
            if copied_by_prefix(info) and filters.wanted(info.name[below:])
        ]
        if not pairs:
            raise ObjectNotFound(
                f"no objects below {paths.as_dir(name) or 'the top'!r}", bucket=source.bucket
            )
    else:
        try:
            found = source.get_info(name)
        except ObjectNotFound as error:
            raise _perhaps_a_prefix(source, name, error) from error
        pairs = [(found, name if dest_name is None else object_name(dest_name, name))]
    for info, new_name in pairs:
        origin = nats_url(source.bucket, info.name)
        if report.dry_run:
            report(f"copy: {origin} to {nats_url(target.bucket, new_name)}")
            continue
        with report.bar.task(info.name, info.size) as advance:
            copied = run(
                copy_object(
                    source.aio,
                    info.name,
                    target.aio,
                    new_name,
                    progress=advance,
                    **reading,
                )
            )
        report(f"{_summary('copied', copied)}  <- {source.bucket}/{render.shell_escape(info.name)}")


@click.command("cp", cls=FilteredCommand)
@click.argument("operands", nargs=-1, required=True, metavar="SOURCE DEST")
@click.option(
    "--recursive", "-r", is_flag=True, help="SOURCE is a directory or prefix; copy all below it."
)
@put_options
@read_options()
@filter_options()
@dry_run_option()
@quiet_option()
@progress_option()
@pass_session
def cp(
    session: Session,
    operands: tuple[str, ...],
    recursive: bool,
    reading: ReadOptions,
    filters: Filters,
    dry_run: bool,
    quiet: bool,
    progress: bool | None,
    **options: Any,
) -> None:
    """Copy as 'aws s3 cp' does: SOURCE and DEST are each a local path ('-' for stdin or
    stdout) or nats://BUCKET/NAME; a local file to an object, an object to a local file, or
    an object to an object (streamed through this client, digest-checked). With -r, a
    directory or a prefix.

    A DEST ending in '/' is a prefix or directory: the source's name is added to it. The
    older form 'cp BUCKET NAME DEST_BUCKET [DEST_NAME]' still copies object to object.
    Description, headers, metadata and chunk size are kept by an object-to-object copy.
    """
    locations = [nats_location(o) for o in operands]
    if any(locations):
        if len(operands) != 2:
            raise UsageProblem("give SOURCE and DEST: a local path and nats://BUCKET/NAME, or two")
        (src, dst), (src_at, dst_at) = operands, locations
        dest_name: str | None = dst_at[1] if dst_at is not None else None
    elif len(operands) in (3, 4):  # BUCKET NAME DEST_BUCKET [DEST_NAME]
        src_at, dst_at = (operands[0], operands[1]), (operands[2], "")
        dest_name = operands[3] if len(operands) == 4 else None
        src = dst = ""
    else:
        raise UsageProblem(
            "give SOURCE and DEST, one of them nats://BUCKET/NAME (or BUCKET NAME DEST_BUCKET"
            " [DEST_NAME])"
        )
    if src_at is not None and not src_at[1] and not recursive:
        raise UsageProblem(f"{src or src_at[0]} names a bucket, not an object: add -r to copy it")
    given = sorted(k for k, v in options.items() if v is not None)
    if given and src_at is not None:  # nothing is put from a file: say so, never ignore them
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise UsageProblem(
            f"{flags} describe an upload: give a local SOURCE (a copy between objects keeps"
            " the source's description, headers, metadata and chunk size)"
        )
    with meter(progress and not dry_run) as bar:
        report = Report(bar, quiet, dry_run)
        if src_at is None and dst_at is not None:
            store = session.store(dst_at[0])
            upload(
                store,
                dst_at[1],
                src,
                recursive=recursive,
                filters=filters,
                report=report,
                put_one=_put_one(store, options),
            )
        elif src_at is not None and dst_at is None:
            download(
                session.store(src_at[0]),
                src_at[1],
                dst,
                recursive=recursive,
                filters=filters,
                report=report,
                reading=reading,
            )
        else:
            assert src_at is not None and dst_at is not None
            client = session.client()
            _copy_within(
                client.store(src_at[0]),
                src_at[1],
                client.store(dst_at[0]),
                dest_name,
                recursive=recursive,
                filters=filters,
                report=report,
                reading=reading,
            )


COMMANDS = (put, get, cat, cp)
