"""Looking at and rearranging objects: ``ls``, ``info``, ``rm``, ``mv``, ``link``, ``meta set``
(``ls --versions``, ``info`` and ``rm`` with ``--version-id`` reach the versions of a
versioned bucket, ``natsobj.cli.commands.versions``)."""

from __future__ import annotations

import sys

import click

from natsobj import paths
from natsobj.cli import render, tree
from natsobj.cli.commands.stores import show_stores
from natsobj.cli.commands.versions import show_versions
from natsobj.cli.exits import UsageProblem
from natsobj.cli.filters import FilteredCommand, Filters, filter_options
from natsobj.cli.operands import nats_location, object_operands
from natsobj.cli.params import (
    dry_run_option,
    header_option,
    json_option,
    metadata_option,
    quiet_option,
    table_option,
)
from natsobj.cli.progress import Meter
from natsobj.cli.report import Report
from natsobj.cli.session import Session, pass_session
from natsobj.errors import ObjectNotFound
from natsobj.matching import NameMatcher, glob_literal_prefix
from natsobj.model import ObjectInfo
from natsobj.paths import nats_url
from natsobj.sync import ObjectStore

LS_COLUMNS = ["NAME", "SIZE", "CHUNKS", "MODIFIED", "DIGEST"]
EXPIRES_COLUMN = "EXPIRES"  # shown when an object listed expires (docs/lifecycle.md)


def _object_row(info: ObjectInfo) -> list[str]:
    plain = info.link is None and not info.deleted
    return [
        render.display_name(info),
        render.size(info.size) if plain else "",
        "offloaded" if info.offloaded else str(info.chunks) if plain else "",
        render.when(info.mtime),
        render.short_digest(info.digest),
    ]


def _dir_row(directory: tree.Directory) -> list[str]:
    return [
        render.shell_escape(directory.name),
        render.size(directory.size),
        "",
        render.when(directory.mtime),
        "",
    ]


@click.command("ls")
@object_operands("bucket", "prefix", required=0)
@click.option(
    "--recursive", "-r", is_flag=True, help="List everything below PREFIX, not one level."
)
@click.option("--deleted", is_flag=True, help="Include deleted objects (tombstones).")
@click.option(
    "--human-readable",
    is_flag=True,
    help="The --summarize total in KiB, MiB, GiB, as aws s3 ls (the listing always shows"
    " sizes so).",
)
@click.option(
    "--summarize",
    is_flag=True,
    help="End with the number and total size of the objects listed (folded ones included).",
)
@table_option(
    "list",
    "versions",
    help_text="Every version of every name at or below PREFIX (as aws s3api"
    " list-object-versions): version id, whether it is the latest, delete markers, and"
    " versions another client's purge lost.",
)
@json_option()
@pass_session
def ls(
    session: Session,
    bucket: str | None,
    prefix: str | None,
    recursive: bool,
    deleted: bool,
    human_readable: bool,
    summarize: bool,
    versions: bool,
    as_json: bool,
) -> None:
    """List objects in BUCKET, with '/' prefixes as directories; without BUCKET, the buckets.

    Without -r, deeper names are folded into one 'dir/' line with their total size.
    A PREFIX that is exactly an object's name lists that object. With --versions, every
    version of every name at or below PREFIX.
    """
    if bucket is None:
        if versions:
            raise UsageProblem("--versions lists the versions in one bucket: name the bucket")
        show_stores(session, as_json)
        return
    prefix = prefix or ""
    if versions:
        show_versions(
            session,
            bucket,
            prefix,
            summarize=summarize,
            human_readable=human_readable,
            as_json=as_json,
        )
        return
    infos = session.store(bucket).list(prefix=paths.listing_prefix(prefix), include_deleted=deleted)
    exact = [i for i in infos if i.name == prefix]
    dirs: list[tree.Directory]
    if exact:
        dirs, objects = [], exact
    elif recursive:
        dirs, objects = [], sorted(paths.under(infos, prefix), key=lambda i: i.name)
    else:
        dirs, objects = tree.one_level(infos, prefix)
    if prefix and not (dirs or objects):
        raise ObjectNotFound(
            f"nothing named {prefix!r} or below {paths.as_dir(prefix)!r}", bucket=bucket
        )
    listed = [i for i in objects if i.link is None and not i.deleted]
    total_objects = len(listed) + sum(d.objects for d in dirs)
    total_size = sum(i.size for i in listed) + sum(d.size for d in dirs)
    if as_json:
        doc: dict[str, object] = {
            "bucket": bucket,
            "prefix": paths.as_dir(prefix) if not exact else prefix,
            "directories": [d.as_dict() for d in dirs],
            "objects": [i.as_dict() for i in objects],
        }
        if summarize:
            doc.update(total_objects=total_objects, total_size=total_size)
        render.emit_json(doc)
        return
    rows = [_dir_row(d) for d in dirs] + [_object_row(i) for i in objects]
    columns = LS_COLUMNS
    if any(i.expires for i in objects):
        columns = [*LS_COLUMNS, EXPIRES_COLUMN]
        expiring = [""] * len(dirs) + [render.when(i.expires) for i in objects]
        rows = [[*row, when] for row, when in zip(rows, expiring, strict=True)]
    render.table(columns, rows, right={"SIZE", "CHUNKS"})
    if summarize:  # aws s3 ls --summarize's lines
        shown = render.size(total_size) if human_readable else str(total_size)
        click.echo(f"\nTotal Objects: {total_objects}\n   Total Size: {shown}")


@click.command("info")
@object_operands("bucket", "name", required=2)
@click.option("--deleted", is_flag=True, help="Show the object even if it was deleted.")
@table_option("version", "version")
@json_option()
@pass_session
def info(
    session: Session,
    bucket: str,
    name: str,
    deleted: bool,
    version: str | None,
    as_json: bool,
) -> None:
    """Show everything recorded about object NAME (with --version-id, about that version;
    --deleted shows a delete marker too).

    A link is shown as a link, not followed.
    """
    found = session.store(bucket).get_info(name, include_deleted=deleted, version=version)
    if as_json:
        render.emit_json(found.as_dict())
    else:
        render.fields(render.info_fields(found))


def _glob_targets(store: ObjectStore, pattern: str) -> list[str]:
    """The names a glob NAME matches (natsobj's globs: ``*`` within a segment, ``**`` across;
    ``[*]`` for a literal ``*``), listed from its literal prefix only."""
    try:
        matcher = NameMatcher.from_options(glob=pattern)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    names = [i.name for i in store.list(prefix=glob_literal_prefix(pattern))]
    found = [name for name in names if matcher.matches(name)]
    if not found:
        raise ObjectNotFound(f"no object matches the glob {pattern!r}", bucket=store.bucket)
    return found


@click.command("rm", cls=FilteredCommand)
@object_operands("bucket", "names", required=2, variadic=True)
@click.option(
    "--recursive", "-r", is_flag=True, help="Treat NAMES as directories: delete all below."
)
@click.option(
    "--yes", "-y", is_flag=True, help="With -r from the top of the bucket: do not ask first."
)
@filter_options()
@table_option(
    "version",
    "version",
    help_text="Remove this version of NAME for good (natsobj ls --versions shows them):"
    " its bytes too. Removing the current version makes the one before it current;"
    " removing a delete marker undeletes.",
)
@dry_run_option("Print what would be deleted; delete nothing.")
@quiet_option()
@pass_session
def rm(
    session: Session,
    bucket: str,
    names: tuple[str, ...],
    recursive: bool,
    yes: bool,
    filters: Filters,
    version: str | None,
    dry_run: bool,
    quiet: bool,
) -> None:
    """Delete objects from BUCKET (a tombstone stays; in a bucket keeping versions, a
    delete marker, and the version deleted is kept).

    A NAME with '*', '?' or '[' is a glob ('up/*.csv'; '*' stays within one '/' segment,
    '**' crosses them; '[*]' is a literal '*'). With -r, a NAME is a prefix and
    --exclude/--include filter the names below it; a NAME of '/', '.' or '' means the
    whole bucket, which asks for confirmation on a terminal and needs --yes otherwise.
    With --version-id, that version of the one NAME is removed for good.
    """
    store = session.store(bucket)
    if version is not None:
        _remove_version(store, names, version, recursive, Report(Meter(None), quiet, dry_run))
        return
    if recursive:
        targets = sorted(
            {
                i.name
                for n in names
                for i in store.list(prefix=paths.as_dir(n))
                if filters.wanted(i.name[len(paths.as_dir(n)) :])
            }
        )
        if not targets:
            raise ObjectNotFound(f"no objects below {', '.join(names)}", bucket=bucket)
        if not yes and not dry_run and any(not paths.as_dir(n) for n in names):
            _confirm_whole_bucket(bucket, len(targets))
    else:
        targets = []
        for name in names:
            if glob_literal_prefix(name) != name:
                targets += _glob_targets(store, name)
            else:
                targets.append(store.get_info(name).name if dry_run else name)
    report = Report(Meter(None), quiet, dry_run)
    for name in targets:
        if dry_run:
            report(f"delete: {nats_url(bucket, name)}")
            continue
        store.delete(name)
        report(f"deleted {bucket}/{render.shell_escape(name)}")


def _remove_version(
    store: ObjectStore, names: tuple[str, ...], version: str, recursive: bool, report: Report
) -> None:
    """``rm --version-id``: one version of one object, for good (aws s3api delete-object
    --version-id), never a glob's or a prefix's worth."""
    if recursive or len(names) != 1 or glob_literal_prefix(names[0]) != names[0]:
        raise UsageProblem(
            f"bucket {store.bucket!r}: --version-id removes a version of one object; name"
            " exactly one object, without -r or a glob"
        )
    name = names[0]
    shown = f"{store.bucket}/{render.shell_escape(name)}"
    if report.dry_run:
        store.get_info(name, include_deleted=True, version=version)
        report(f"delete: {nats_url(store.bucket, name)} (version {version}, for good)")
        return
    removed = store.delete(name, version=version)
    what = "delete marker" if removed.deleted else "version"
    report(f"removed {what} {version} of {shown} for good")


def _confirm_whole_bucket(bucket: str, count: int) -> None:
    """A prefix that normalizes to the top (often an empty shell variable: ``rm -r b "$dir"``)
    would silently empty the bucket: ask a person, refuse a script that did not say --yes."""
    if not sys.stdin.isatty():
        raise UsageProblem(
            f"bucket {bucket!r}: rm -r from the top of the bucket deletes all {count} objects; "
            "pass --yes to do that without a terminal, or name a prefix"
        )
    click.confirm(f"Delete all {count} objects in bucket {bucket}?", abort=True)


@click.command("mv")
@object_operands("bucket", "name", "new_name", required=3)
@pass_session
def mv(session: Session, bucket: str, name: str, new_name: str) -> None:
    """Rename object NAME to NEW_NAME without copying its data.

    NEW_NAME may be nats://BUCKET/NEW_NAME in the same bucket (a rename does not move data
    between buckets: cp, then rm)."""
    target = nats_location(new_name)
    if target is not None:
        if target[0] != bucket:
            raise UsageProblem(
                f"mv renames within bucket {bucket!r}; to move to {target[0]!r}, cp then rm"
            )
        new_name = target[1]
    session.store(bucket).update_meta(name, new_name=new_name)
    click.echo(f"renamed {bucket}/{name} -> {bucket}/{new_name}")


@click.command("link")
@object_operands("bucket", "name", "target_bucket", "target_name", required=3)
@pass_session
def link(
    session: Session, bucket: str, name: str, target_bucket: str, target_name: str | None
) -> None:
    """Make NAME a link to another object or to a whole bucket.

    With TARGET_NAME the link points at that object of TARGET_BUCKET; without it, at the
    bucket itself.
    """
    client = session.client()
    store = client.store(bucket)
    target = client.store(target_bucket)
    if target_name is None:
        created = store.add_bucket_link(name, target)
    else:
        created = store.add_link(name, target.get_info(target_name))
    click.echo(f"linked {bucket}/{name} -> {render.link_target(created)}")


@click.group("meta")
def meta_group() -> None:
    """Change an object's description, headers or metadata."""


@meta_group.command("set")
@object_operands("bucket", "name", required=2)
@click.option("--description", "-d", help="New description.")
@header_option("Set a header, repeatable; merged into the existing headers.")
@metadata_option("Set a metadata key, repeatable; merged into the existing metadata.")
@click.option("--replace", is_flag=True, help="Replace headers/metadata instead of merging.")
@click.option("--unset", "unset", multiple=True, metavar="KEY", help="Remove a metadata key.")
@json_option()
@pass_session
def meta_set(
    session: Session,
    bucket: str,
    name: str,
    description: str | None,
    headers: dict[str, list[str] | str] | None,
    metadata: dict[str, str] | None,
    replace: bool,
    unset: tuple[str, ...],
    as_json: bool,
) -> None:
    """Update the meta record of object NAME; the data is not touched."""
    if description is None and headers is None and metadata is None and not unset:
        raise UsageProblem("nothing to change: give --description, --header, --metadata or --unset")
    store = session.store(bucket)
    current = store.get_info(name)
    if headers is not None and not replace:
        headers = {**current.headers, **headers}
    if metadata is not None or unset:
        base = {} if replace else dict(current.metadata)
        base.update(metadata or {})
        metadata = {k: v for k, v in base.items() if k not in unset}
    updated = store.update_meta(name, description=description, headers=headers, metadata=metadata)
    if as_json:
        render.emit_json(updated.as_dict())
    else:
        render.fields(render.info_fields(updated))


COMMANDS = (ls, info, rm, mv, link, meta_group)
