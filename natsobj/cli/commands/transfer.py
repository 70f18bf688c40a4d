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
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

import click

from natsobj import paths
from natsobj.aio.copy import copy_object
from natsobj.aio.ranges import byte_range as object_range
from natsobj.aio.sources import Readable
from natsobj.cli import render, tree
from natsobj.cli.exits import UsageProblem
from natsobj.cli.params import (
    ChunkSize,
    allow_missing_digest_option,
    header_option,
    metadata_option,
    progress_option,
    range_option,
    table_option,
)
from natsobj.cli.progress import CountingReader, Meter, meter
from natsobj.cli.session import Session, pass_session
from natsobj.errors import ObjectNotFound
from natsobj.localfiles import open_target, replacing
from natsobj.model import ObjectInfo
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


@click.command("put")
@click.argument("bucket")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, allow_dash=True, path_type=str))
@click.option("--recursive", "-r", is_flag=True, help="PATH is a directory; NAME is the prefix.")
@click.option("--description", "-d", help="Description stored with the object.")
@header_option("Header stored with the object, repeatable.")
@metadata_option("Metadata stored with the object, repeatable.")
@click.option(
    "--chunk-size", type=ChunkSize(), metavar="BYTES", help="Chunk size (at least 512 bytes)."
)
@table_option(
    "put",
    "ttl",
    help_text="Expire the object this long after the put (7d, 12h, 90s), on the server;"
    " 'never' keeps it whatever the bucket's lifecycle rules say. Default: the rules.",
)
@progress_option()
@pass_session
def put(
    session: Session,
    bucket: str,
    name: str,
    path: str,
    recursive: bool,
    progress: bool | None,
    description: str | None,
    headers: dict[str, list[str] | str] | None,
    metadata: dict[str, str] | None,
    chunk_size: int | None,
    ttl: timedelta | None,
) -> None:
    """Store PATH (file, '-' for stdin, directory with -r) as NAME."""
    source = Path(path)
    if recursive != (path != STDIO and source.is_dir()):
        raise UsageProblem(
            f"{path} is a directory: add -r to store everything below it"
            if not recursive
            else f"-r needs a directory, and {path} is not one"
        )
    store = session.store(bucket)
    put_one = functools.partial(
        store.put,
        description=description,
        headers=headers,
        metadata=metadata,
        chunk_size=chunk_size,
        ttl=ttl,
    )
    with meter(progress) as bar:
        if path == STDIO:
            stdin = sys.stdin.buffer
            click.echo(_summary("put", _put_stream(put_one, name, stdin, _stdin_size(stdin), bar)))
            return
        files = tree.local_files(source) if recursive else [(source, "")]
        for file, relative in files:
            object_name = tree.join_name(name, relative) if recursive else name
            with file.open("rb") as stream:
                info = _put_stream(put_one, object_name, stream, file.stat().st_size, bar)
            click.echo(_summary("put", info))


def _copy_out(
    store: ObjectStore, name: str, out: BinaryIO, bar: Meter, allow_missing_digest: bool
) -> ObjectInfo:
    with (
        store.get(name, allow_missing_digest=allow_missing_digest) as reader,
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
    allow_missing_digest: bool,
    within: Path | None = None,
) -> ObjectInfo:
    """The core writes beside the target and renames once the digest matches; ``within``,
    the directory ``-r`` fills, is never left (``ObjectStore.get_file``)."""
    with bar.task(name, store.get_info(name).size) as advance:
        return store.get_file(
            name,
            target,
            progress=advance,
            allow_missing_digest=allow_missing_digest,
            within=within,
        )


def _copy_range(
    store: ObjectStore,
    name: str,
    requested: tuple[int, int | None],
    out: BinaryIO,
    bar: Meter,
    allow_missing_digest: bool,
) -> tuple[ObjectInfo, int, int]:
    """Write bytes ``requested`` (the core's convention, see ``ByteRange``) of NAME to
    ``out``, a piece at a time; returns the version read and the first and last+1 offsets.
    A start at or past the end is refused, as an HTTP server answers 416."""
    opened = store.open_range(name, allow_missing_digest=allow_missing_digest)
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
    allow_missing_digest: bool,
) -> tuple[ObjectInfo, int, int]:
    """Written as the core's get_file writes (``natsobj.localfiles.replacing``): beside
    ``destination``, renamed over it, with its mode, once every byte of the range arrived."""
    with (
        open_target(destination, bucket=store.bucket, name=name) as target,
        replacing(target) as handle,
    ):
        return _copy_range(store, name, requested, handle, bar, allow_missing_digest)


def _range_summary(info: ObjectInfo, first: int, last: int) -> str:
    shown = f"{first}-{last - 1}" if last > first else "nothing"
    return (
        f"got {info.bucket}/{render.shell_escape(info.name)}  bytes {shown}/{info.size}"
        f"  {render.size(last - first)}"
    )


@click.command("get")
@click.argument("bucket")
@click.argument("name")
@click.argument("path", type=click.Path(allow_dash=True, path_type=str))
@click.option(
    "--recursive", "-r", is_flag=True, help="NAME is a prefix; PATH the directory to fill."
)
@allow_missing_digest_option()
@range_option()
@progress_option()
@pass_session
def get(
    session: Session,
    bucket: str,
    name: str,
    path: str,
    recursive: bool,
    allow_missing_digest: bool,
    byte_range: tuple[int, int | None] | None,
    progress: bool | None,
) -> None:
    """Fetch NAME from BUCKET into PATH (file, directory or '-').

    Links are followed. The digest is verified; a mismatch exits with code 4. With --range
    only those bytes are fetched and written (no digest covers a range).
    """
    if recursive and path == STDIO:
        raise UsageProblem("-r writes a directory tree and cannot write to stdout")
    if recursive and byte_range is not None:
        raise UsageProblem("--range reads one object and cannot be used with -r")
    store = session.store(bucket)
    with meter(progress) as bar:
        if byte_range is not None:
            if path == STDIO:
                _copy_range(store, name, byte_range, sys.stdout.buffer, bar, allow_missing_digest)
                sys.stdout.buffer.flush()
                return
            destination = Path(path)
            if destination.is_dir():
                destination = destination / name.rsplit(paths.SEP, 1)[-1]
            ranged = _range_to_file(store, name, byte_range, destination, bar, allow_missing_digest)
            click.echo(f"{_range_summary(*ranged)} -> {destination}")
            return
        if path == STDIO:
            out = sys.stdout.buffer
            _copy_out(store, name, out, bar, allow_missing_digest)
            out.flush()
            return
        destination = Path(path)
        if not recursive:
            if destination.is_dir():
                destination = destination / name.rsplit(paths.SEP, 1)[-1]
            got = _get_to_file(store, name, destination, bar, allow_missing_digest)
            click.echo(f"{_summary('got', got)} -> {destination}")
            return
        wanted = [
            i
            for i in store.list(prefix=paths.as_dir(name))
            if not (i.link and i.link.is_bucket_link)
        ]
        if not wanted:
            raise ObjectNotFound(
                f"no objects below {paths.as_dir(name) or 'the top'!r}", bucket=bucket
            )
        plan = tree.plan_local(wanted, name, bucket)
        plan.warn()
        for relative, info in plan.targets.items():
            target = plan.path(destination, relative)
            with plan.one_object():
                got = _get_to_file(
                    store, info.name, target, bar, allow_missing_digest, within=destination
                )
                click.echo(f"{_summary('got', got)} -> {target}")
        plan.check()


@click.command("cat")
@click.argument("bucket")
@click.argument("name")
@allow_missing_digest_option()
@range_option()
@pass_session
def cat(
    session: Session,
    bucket: str,
    name: str,
    allow_missing_digest: bool,
    byte_range: tuple[int, int | None] | None,
) -> None:
    """Write NAME (or, with --range, those bytes of it) to stdout.

    Links are followed. A whole object's digest is verified (a mismatch exits with code 4
    after the bytes went out); a range fetches only the chunks holding it.
    """
    store = session.store(bucket)
    out = sys.stdout.buffer
    with meter(False) as bar:
        if byte_range is None:
            _copy_out(store, name, out, bar, allow_missing_digest)
        else:
            _copy_range(store, name, byte_range, out, bar, allow_missing_digest)
    out.flush()


@click.command("cp")
@click.argument("bucket")
@click.argument("name")
@click.argument("dest_bucket")
@click.argument("dest_name", required=False)
@click.option("--recursive", "-r", is_flag=True, help="NAME is a prefix; copy everything below it.")
@allow_missing_digest_option()
@progress_option()
@pass_session
def cp(
    session: Session,
    bucket: str,
    name: str,
    dest_bucket: str,
    dest_name: str | None,
    recursive: bool,
    allow_missing_digest: bool,
    progress: bool | None,
) -> None:
    """Copy object NAME of BUCKET to DEST_NAME (default: NAME) in DEST_BUCKET.

    Description, headers, metadata and chunk size are kept; links are followed. With -r every
    object below the prefix NAME is copied below DEST_NAME.
    """
    client = session.client()
    source, target = client.store(bucket), client.store(dest_bucket)
    if recursive:
        below = len(paths.as_dir(name))
        pairs = [
            (info, tree.join_name(dest_name or name, info.name[below:]))
            for info in paths.under(source.list(), name)
            if not (info.link and info.link.is_bucket_link)
        ]
        if not pairs:
            raise ObjectNotFound(
                f"no objects below {paths.as_dir(name) or 'the top'!r}", bucket=bucket
            )
    else:
        pairs = [(source.get_info(name), dest_name or name)]
    with meter(progress) as bar:
        for info, new_name in pairs:
            with bar.task(info.name, info.size) as advance:
                copied = run(
                    copy_object(
                        source.aio,
                        info.name,
                        target.aio,
                        new_name,
                        progress=advance,
                        allow_missing_digest=allow_missing_digest,
                    )
                )
            click.echo(
                f"{_summary('copied', copied)}  <- {bucket}/{render.shell_escape(info.name)}"
            )


COMMANDS = (put, get, cat, cp)
