"""Object versions on the command line (docs/versioning.md), in ``aws s3api``'s words:
``ls --versions`` (list-object-versions), ``restore --version-id`` (copy-object from a
version over the current one), ``store versioning`` (get/put-bucket-versioning). ``get``,
``cat``, ``info`` and ``rm`` take ``--version-id`` where they are defined."""

from __future__ import annotations

import click

from natsobj import paths
from natsobj.cli import render
from natsobj.cli.exits import UsageProblem
from natsobj.cli.operands import BucketName, object_operands
from natsobj.cli.params import json_option, table_option
from natsobj.cli.session import Session, pass_session
from natsobj.errors import ObjectNotFound
from natsobj.versioning import ObjectVersion, Versioning

VERSION_COLUMNS = ["NAME", "VERSION ID", "LATEST", "DELETE MARKER", "SIZE", "MODIFIED"]
LOST_COLUMN = "LOST"  # shown when a listed version's chunks were purged by another client
# The states ``store versioning`` sets, in S3's words (a bucket is never unversioned again)
SETTABLE = [state.value for state in Versioning if state.value]


def _yes(flag: bool) -> str:
    return "yes" if flag else ""


def _version_row(version: ObjectVersion) -> list[str]:
    return [
        render.display_name(version.info),
        version.version_id,
        _yes(version.is_latest),
        _yes(version.delete_marker),
        "" if version.delete_marker else render.size(version.info.size),
        render.when(version.mtime),
    ]


def _version_doc(version: ObjectVersion) -> dict[str, object]:
    return {
        **version.info.as_dict(),
        "version_id": version.version_id,
        "is_latest": version.is_latest,
        "delete_marker": version.delete_marker,
        "lost": version.lost,
    }


def show_versions(
    session: Session,
    bucket: str,
    prefix: str,
    *,
    summarize: bool,
    human_readable: bool,
    as_json: bool,
) -> None:
    """``ls --versions``: every version of every name at or below PREFIX (as
    ``aws s3api list-object-versions --prefix``, not one directory level), by name and
    newest first; a delete marker and a kept version another client's purge lost are marked,
    never read."""
    directory = paths.as_dir(prefix)
    found = [
        v
        for v in session.store(bucket).versions(prefix=paths.listing_prefix(prefix))
        if not prefix or v.name == prefix or v.name.startswith(directory)
    ]
    if prefix and not found:
        raise ObjectNotFound(
            f"no version of anything named {prefix!r} or below {directory!r}", bucket=bucket
        )
    versions = [v for v in found if not v.delete_marker]
    total_size = sum(v.info.size for v in versions if not v.lost)
    if as_json:
        doc: dict[str, object] = {
            "bucket": bucket,
            "prefix": prefix,
            "versions": [_version_doc(v) for v in found],
        }
        if summarize:
            doc.update(total_versions=len(versions), total_size=total_size)
        render.emit_json(doc)
        return
    rows = [_version_row(v) for v in found]
    columns = VERSION_COLUMNS
    if any(v.lost for v in found):
        columns = [*VERSION_COLUMNS, LOST_COLUMN]
        rows = [[*row, _yes(v.lost)] for row, v in zip(rows, found, strict=True)]
    render.table(columns, rows, right={"SIZE"})
    if summarize:
        shown = render.size(total_size) if human_readable else str(total_size)
        click.echo(f"\nTotal Versions: {len(versions)}\n   Total Size: {shown}")


@click.command("restore")
@object_operands("bucket", "name", required=2)
@table_option(
    "version",
    "version",
    help_text="The version to restore (natsobj ls --versions shows them). Required.",
)
@json_option()
@pass_session
def restore(session: Session, bucket: str, name: str, version: str | None, as_json: bool) -> None:
    """Make version --version-id of NAME its current version again.

    As aws s3api copy-object from a version: the version's bytes are copied over the
    current ones (streamed through this client and digest-checked), so the current version
    is kept as a version too where the bucket keeps versions. A delete marker cannot be
    restored: remove it (natsobj rm --version-id) to undelete."""
    if version is None:
        raise UsageProblem(
            f"bucket {bucket!r}, object {name!r}: name the version to restore with --version-id"
            " (natsobj ls --versions shows them)"
        )
    store = session.store(bucket)
    copied = store.restore(name, version)
    if as_json:
        render.emit_json({**copied.as_dict(), "version_id": copied.nuid, "restored": version})
        return
    click.echo(
        f"restored {bucket}/{render.shell_escape(name)} from version {version}:"
        f" now version {copied.nuid}, {render.size(copied.size)}"
    )


@click.command("versioning")
@click.argument("bucket", type=BucketName())
@click.argument(
    "state", required=False, type=click.Choice(SETTABLE, case_sensitive=False), metavar="[STATE]"
)
@json_option()
@pass_session
def versioning(session: Session, bucket: str, state: str | None, as_json: bool) -> None:
    """Show BUCKET's versioning, or set it: STATE is Enabled or Suspended (any case).

    As aws s3api get-/put-bucket-versioning: Enabled keeps the version every write and
    delete replaces; Suspended stops keeping new ones (those kept stay). A bucket once
    versioned cannot be unversioned again. Setting it needs a stream admin's permission;
    other processes follow within 30 seconds."""
    store = session.store(bucket)
    now = store.versioning() if state is None else store.set_versioning(state)
    if as_json:
        render.emit_json({"bucket": bucket, "status": now.value or None})
        return
    click.echo(f"versioning of bucket {bucket}: {now.value or 'never enabled'}")


COMMANDS = (restore,)
