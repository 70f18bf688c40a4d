"""Looking at and rearranging objects: ``ls``, ``info``, ``rm``, ``mv``, ``link``, ``meta set``."""

from __future__ import annotations

import sys

import click

from natsobj import paths
from natsobj.cli import render, tree
from natsobj.cli.commands.stores import show_stores
from natsobj.cli.exits import UsageProblem
from natsobj.cli.params import header_option, json_option, metadata_option
from natsobj.cli.session import Session, pass_session
from natsobj.errors import ObjectNotFound
from natsobj.model import ObjectInfo

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
@click.argument("bucket", required=False)
@click.argument("prefix", required=False, default="")
@click.option(
    "--recursive", "-r", is_flag=True, help="List everything below PREFIX, not one level."
)
@click.option("--deleted", is_flag=True, help="Include deleted objects (tombstones).")
@json_option()
@pass_session
def ls(
    session: Session,
    bucket: str | None,
    prefix: str,
    recursive: bool,
    deleted: bool,
    as_json: bool,
) -> None:
    """List objects in BUCKET, with '/' prefixes as directories; without BUCKET, the buckets.

    Without -r, deeper names are folded into one 'dir/' line with their total size.
    A PREFIX that is exactly an object's name lists that object.
    """
    if bucket is None:
        show_stores(session, as_json)
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
    if as_json:
        render.emit_json(
            {
                "bucket": bucket,
                "prefix": paths.as_dir(prefix) if not exact else prefix,
                "directories": [d.as_dict() for d in dirs],
                "objects": [i.as_dict() for i in objects],
            }
        )
        return
    rows = [_dir_row(d) for d in dirs] + [_object_row(i) for i in objects]
    columns = LS_COLUMNS
    if any(i.expires for i in objects):
        columns = [*LS_COLUMNS, EXPIRES_COLUMN]
        expiring = [""] * len(dirs) + [render.when(i.expires) for i in objects]
        rows = [[*row, when] for row, when in zip(rows, expiring, strict=True)]
    render.table(columns, rows, right={"SIZE", "CHUNKS"})


@click.command("info")
@click.argument("bucket")
@click.argument("name")
@click.option("--deleted", is_flag=True, help="Show the object even if it was deleted.")
@json_option()
@pass_session
def info(session: Session, bucket: str, name: str, deleted: bool, as_json: bool) -> None:
    """Show everything recorded about object NAME.

    A link is shown as a link, not followed.
    """
    found = session.store(bucket).get_info(name, include_deleted=deleted)
    if as_json:
        render.emit_json(found.as_dict())
    else:
        render.fields(render.info_fields(found))


@click.command("rm")
@click.argument("bucket")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--recursive", "-r", is_flag=True, help="Treat NAMES as directories: delete all below."
)
@click.option(
    "--yes", "-y", is_flag=True, help="With -r from the top of the bucket: do not ask first."
)
@pass_session
def rm(session: Session, bucket: str, names: tuple[str, ...], recursive: bool, yes: bool) -> None:
    """Delete objects from BUCKET (a tombstone stays).

    With -r, a NAME of '/', '.' or '' means the whole bucket: that asks for confirmation on a
    terminal and needs --yes otherwise.
    """
    store = session.store(bucket)
    targets = list(names)
    if recursive:
        targets = sorted({i.name for n in names for i in store.list(prefix=paths.as_dir(n))})
        if not targets:
            raise ObjectNotFound(f"no objects below {', '.join(names)}", bucket=bucket)
        if not yes and any(not paths.as_dir(n) for n in names):
            _confirm_whole_bucket(bucket, len(targets))
    for name in targets:
        store.delete(name)
        click.echo(f"deleted {bucket}/{render.shell_escape(name)}")


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
@click.argument("bucket")
@click.argument("name")
@click.argument("new_name")
@pass_session
def mv(session: Session, bucket: str, name: str, new_name: str) -> None:
    """Rename object NAME to NEW_NAME without copying its data."""
    session.store(bucket).update_meta(name, new_name=new_name)
    click.echo(f"renamed {bucket}/{name} -> {bucket}/{new_name}")


@click.command("link")
@click.argument("bucket")
@click.argument("name")
@click.argument("target_bucket")
@click.argument("target_name", required=False)
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
@click.argument("bucket")
@click.argument("name")
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
