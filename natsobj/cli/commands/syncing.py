"""``natsobj sync``: make a prefix look like a local directory, or the other way round.

Files are compared by size and SHA-256 digest (the digest the store already records), never by
modification time alone, so a re-run transfers nothing and a changed file of the same size is
still sent. ``--include``/``--exclude`` take the globs every natsobj face uses.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import click

from natsobj import paths
from natsobj.cli import render, tree
from natsobj.cli.exits import UsageProblem
from natsobj.cli.params import allow_missing_digest_option, progress_option
from natsobj.cli.progress import CountingReader, Meter, meter
from natsobj.cli.session import Session, pass_session
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo, format_digest
from natsobj.paths import is_nats_url, nats_url, parse_nats_url
from natsobj.sync import ObjectStore


@dataclass(frozen=True)
class Location:
    bucket: str
    prefix: str

    def uri(self, relative: str = "") -> str:
        return nats_url(self.bucket, tree.join_name(self.prefix, relative)).rstrip("/")


@dataclass(frozen=True)
class Filters:
    """A relative path is skipped when an ``--exclude`` matches it and no ``--include`` does
    (``--exclude '**' --include '*.csv'`` keeps only the CSV files at the top)."""

    include: tuple[NameMatcher, ...]
    exclude: tuple[NameMatcher, ...]

    def wanted(self, relative: str) -> bool:
        if not any(m.matches(relative) for m in self.exclude):
            return True
        return any(m.matches(relative) for m in self.include)


def _location(text: str) -> Location | None:
    if not is_nats_url(text):
        return None
    parsed = parse_nats_url(text)
    if not parsed.bucket or parsed.conn_id:
        raise UsageProblem(f"{text}: name a bucket, as in nats://bucket/prefix")
    return Location(parsed.bucket, parsed.key.strip("/"))


def _file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return format_digest(hashlib.file_digest(handle, "sha256").digest())


def _same(path: Path, info: ObjectInfo) -> bool:
    """Size first (cheap), then the digest the store recorded."""
    return path.stat().st_size == info.size and _file_digest(path) == info.digest


def _remote_objects(store: ObjectStore, where: Location) -> dict[str, ObjectInfo]:
    """Objects below the prefix by relative name; links are left alone."""
    below = len(paths.as_dir(where.prefix))
    return {
        info.name[below:]: info
        for info in paths.under(store.list(), where.prefix)
        if info.link is None and info.name[below:]
    }


@click.command("sync")
@click.argument("source")
@click.argument("destination")
@click.option("--delete", is_flag=True, help="Delete what the destination has and SOURCE lacks.")
@click.option("--dry-run", is_flag=True, help="Print what would be done; change nothing.")
@click.option("--include", multiple=True, metavar="GLOB", help="Keep paths an --exclude matched.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching relative paths.")
@allow_missing_digest_option()
@progress_option()
@pass_session
def sync_command(
    session: Session,
    source: str,
    destination: str,
    delete: bool,
    dry_run: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    allow_missing_digest: bool,
    progress: bool | None,
) -> None:
    """Copy new and changed files between a directory and nats://BUCKET/PREFIX.

    One side is a local directory, the other a nats:// URL; either may be the SOURCE. Files are
    compared by size and SHA-256. Globs are relative to the directory or prefix ('*' within a
    segment, '**' across).
    """
    remote_source, remote_destination = _location(source), _location(destination)
    if (remote_source is None) == (remote_destination is None):
        raise UsageProblem("give one local directory and one nats://BUCKET/PREFIX")
    try:
        filters = Filters(
            tuple(NameMatcher.from_options(glob=g) for g in include),
            tuple(NameMatcher.from_options(glob=g) for g in exclude),
        )
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    with meter(progress and not dry_run) as bar:
        if remote_destination is not None:
            _upload(session, Path(source), remote_destination, filters, delete, dry_run, bar)
        else:
            assert remote_source is not None
            _download(
                session,
                remote_source,
                Path(destination),
                filters,
                delete,
                dry_run,
                bar,
                allow_missing_digest=allow_missing_digest,
            )


def _say(dry_run: bool, text: str) -> None:
    click.echo(f"(dryrun) {text}" if dry_run else text)


def _upload(
    session: Session,
    root: Path,
    where: Location,
    filters: Filters,
    delete: bool,
    dry_run: bool,
    bar: Meter,
) -> None:
    if not root.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    store = session.store(where.bucket)
    remote = {k: v for k, v in _remote_objects(store, where).items() if filters.wanted(k)}
    local = {rel: path for path, rel in tree.local_files(root) if filters.wanted(rel)}
    for relative, path in local.items():
        if relative in remote and _same(path, remote[relative]):
            continue
        _say(
            dry_run,
            f"upload: {render.shell_escape(str(path))}"
            f" to {render.shell_escape(where.uri(relative))}",
        )
        if dry_run:
            continue
        with path.open("rb") as stream, bar.task(relative, path.stat().st_size) as advance:
            store.put(tree.join_name(where.prefix, relative), CountingReader(stream, advance))
    if delete:
        for relative in sorted(set(remote) - set(local)):
            _say(dry_run, f"delete: {render.shell_escape(where.uri(relative))}")
            if not dry_run:
                store.delete(remote[relative].name)


def _download(
    session: Session,
    where: Location,
    root: Path,
    filters: Filters,
    delete: bool,
    dry_run: bool,
    bar: Meter,
    *,
    allow_missing_digest: bool,
) -> None:
    if root.exists() and not root.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    store = session.store(where.bucket)
    plan = tree.plan_local(
        _remote_objects(store, where).values(), where.prefix, where.bucket, filters.wanted
    )
    plan.warn()
    local = (
        {rel: path for path, rel in tree.local_files(root) if filters.wanted(rel)}
        if root.exists()
        else {}
    )
    for relative, info in plan.targets.items():
        target = plan.path(root, relative)
        if target.is_file() and _same(target, info):
            continue
        source = nats_url(info.bucket, render.shell_escape(info.name))
        _say(dry_run, f"download: {source} to {render.shell_escape(str(target))}")
        if not dry_run:
            with bar.task(relative, info.size) as advance, plan.one_object():
                store.get_file(
                    info.name,
                    target,
                    progress=advance,
                    allow_missing_digest=allow_missing_digest,
                    within=root,
                )
    if delete:
        for relative in sorted(set(local) - plan.claimed):
            _say(dry_run, f"delete: {render.shell_escape(str(local[relative]))}")
            if not dry_run:
                local[relative].unlink()
    plan.check()


COMMANDS = (sync_command,)
