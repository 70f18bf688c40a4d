"""``natsobj sync``: make a prefix look like a local directory, or the other way round.

Files are compared by size and SHA-256 digest (the digest the store already records), never by
modification time alone (``natsobj.local.mirror``, shared with the Airflow hook's
``sync_to_local_dir``), so a re-run transfers nothing and a changed file of the same size is
still sent. ``--include``/``--exclude`` are ``aws s3``'s filters (``natsobj.cli.filters``),
applied to both sides' relative paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from natsobj.cli import render, tree
from natsobj.cli.exits import UsageProblem
from natsobj.cli.filters import FilteredCommand, Filters, filter_options
from natsobj.cli.operands import nats_location
from natsobj.cli.params import (
    dry_run_option,
    progress_option,
    quiet_option,
    read_options,
)
from natsobj.cli.progress import CountingReader, meter
from natsobj.cli.report import Report
from natsobj.cli.session import Session, pass_session
from natsobj.local.mirror import local_files, objects_below, up_to_date
from natsobj.model import ObjectInfo
from natsobj.operation_options import ReadOptions
from natsobj.paths import nats_url
from natsobj.sync import ObjectStore


@dataclass(frozen=True)
class Location:
    bucket: str
    prefix: str

    def uri(self, relative: str = "") -> str:
        return nats_url(self.bucket, tree.join_name(self.prefix, relative)).rstrip("/")


def _location(text: str) -> Location | None:
    location = nats_location(text)
    return None if location is None else Location(location[0], location[1].strip("/"))


def _remote_objects(store: ObjectStore, where: Location) -> dict[str, ObjectInfo]:
    return objects_below(store.list(), where.prefix)


@click.command("sync", cls=FilteredCommand)
@click.argument("source")
@click.argument("destination")
@click.option("--delete", is_flag=True, help="Delete what the destination has and SOURCE lacks.")
@dry_run_option()
@filter_options()
@quiet_option()
@read_options()
@progress_option()
@pass_session
def sync_command(
    session: Session,
    source: str,
    destination: str,
    delete: bool,
    dry_run: bool,
    filters: Filters,
    quiet: bool,
    reading: ReadOptions,
    progress: bool | None,
) -> None:
    """Copy new and changed files between a directory and nats://BUCKET/PREFIX.

    One side is a local directory, the other a nats:// URL; either may be the SOURCE. Files are
    compared by size and SHA-256. --exclude/--include patterns are relative to the directory
    or prefix, as aws s3 sync reads them ('*' crosses '/', the last matching filter decides).
    """
    remote_source, remote_destination = _location(source), _location(destination)
    if (remote_source is None) == (remote_destination is None):
        raise UsageProblem("give one local directory and one nats://BUCKET/PREFIX")
    with meter(progress and not dry_run) as bar:
        say = Report(bar, quiet, dry_run)
        if remote_destination is not None:
            _upload(session, Path(source), remote_destination, filters, delete, say)
        else:
            assert remote_source is not None
            _download(
                session,
                remote_source,
                Path(destination),
                filters,
                delete,
                say,
                reading=reading,
            )


def _upload(
    session: Session,
    root: Path,
    where: Location,
    filters: Filters,
    delete: bool,
    say: Report,
) -> None:
    if not root.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    store = session.store(where.bucket)
    remote = {k: v for k, v in _remote_objects(store, where).items() if filters.wanted(k)}
    local = {rel: path for path, rel in local_files(root) if filters.wanted(rel)}
    for relative, path in local.items():
        if relative in remote and up_to_date(path, remote[relative]):
            continue
        say(
            f"upload: {render.shell_escape(str(path))}"
            f" to {render.shell_escape(where.uri(relative))}"
        )
        if say.dry_run:
            continue
        with path.open("rb") as stream, say.bar.task(relative, path.stat().st_size) as advance:
            store.put(tree.join_name(where.prefix, relative), CountingReader(stream, advance))
    if delete:
        for relative in sorted(set(remote) - set(local)):
            say(f"delete: {render.shell_escape(where.uri(relative))}")
            if not say.dry_run:
                store.delete(remote[relative].name)


def _download(
    session: Session,
    where: Location,
    root: Path,
    filters: Filters,
    delete: bool,
    say: Report,
    *,
    reading: ReadOptions,
) -> None:
    if root.exists() and not root.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    store = session.store(where.bucket)
    plan = tree.plan_local(
        _remote_objects(store, where).values(), where.prefix, where.bucket, filters.wanted
    )
    plan.warn()
    local = (
        {rel: path for path, rel in local_files(root) if filters.wanted(rel)}
        if root.exists()
        else {}
    )
    for relative, info in plan.targets.items():
        target = plan.path(root, relative)
        if up_to_date(target, info):
            continue
        source = nats_url(info.bucket, render.shell_escape(info.name))
        say(f"download: {source} to {render.shell_escape(str(target))}")
        if not say.dry_run:
            with say.bar.task(relative, info.size) as advance, plan.one_object():
                store.get_file(
                    info.name,
                    target,
                    progress=advance,
                    **reading,
                    within=root,
                )
    if delete:
        for relative in sorted(set(local) - plan.claimed):
            say(f"delete: {render.shell_escape(str(local[relative]))}")
            if not say.dry_run:
                local[relative].unlink()
    plan.check()


COMMANDS = (sync_command,)
