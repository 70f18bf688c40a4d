"""``natsobj stores`` and ``natsobj store create|status|seal|rm|compact``."""

from __future__ import annotations

import dataclasses

import click

from natsobj.cli import render
from natsobj.cli.params import json_option, metadata_option
from natsobj.cli.session import Session, pass_session
from natsobj.model import StoreStatus


def _ttl(status: StoreStatus) -> str:
    return f"{status.ttl.total_seconds():g}s" if status.ttl else ""


def _max_bytes(status: StoreStatus) -> str:
    return "unlimited" if status.max_bytes < 0 else render.size(status.max_bytes)


@click.command("stores")
@json_option()
@pass_session
def list_stores(session: Session, as_json: bool) -> None:
    """List the object stores (buckets) on the server."""
    show_stores(session, as_json)


def show_stores(session: Session, as_json: bool) -> None:
    """The bucket table (``stores``, and ``ls`` without a bucket, as ``aws s3 ls`` does)."""
    client = session.client()
    statuses = [client.store(name).status() for name in sorted(client.store_names())]
    if as_json:
        render.emit_json([s.as_dict() for s in statuses])
        return
    render.table(
        ["BUCKET", "SIZE", "STORAGE", "REPLICAS", "TTL", "SEALED", "DESCRIPTION"],
        (
            [
                s.bucket,
                render.size(s.size),
                s.storage,
                str(s.replicas),
                _ttl(s),
                "yes" if s.sealed else "",
                s.description,
            ]
            for s in statuses
        ),
        right={"SIZE", "REPLICAS"},
    )


@click.group("store")
def store_group() -> None:
    """Create, inspect, seal, compact or delete one object store."""


def _show_status(status: StoreStatus, as_json: bool) -> None:
    if as_json:
        render.emit_json(status.as_dict())
        return
    pairs = [
        ("bucket", status.bucket),
        ("description", status.description),
        ("size", render.size(status.size)),
        ("max bytes", _max_bytes(status)),
        ("messages", str(status.messages)),
        ("storage", status.storage),
        ("replicas", str(status.replicas)),
        ("ttl", _ttl(status) or "none"),
        ("compressed", "yes" if status.is_compressed else "no"),
        ("sealed", "yes" if status.sealed else "no"),
    ]
    if status.offloaded_objects is not None and status.offloaded_bytes is not None:
        pairs.append(
            (
                "offloaded to S3",
                f"{status.offloaded_objects} objects, {render.size(status.offloaded_bytes)}",
            )
        )
    pairs += [(f"metadata {k}", v) for k, v in sorted(status.metadata.items())]
    render.fields(pairs)


@store_group.command("create")
@click.argument("bucket")
@click.option("--description", "-d", help="What the bucket holds.")
@metadata_option("Bucket metadata, repeatable.")
@click.option(
    "--ttl",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Expire objects after this many seconds.",
)
@click.option(
    "--max-bytes",
    type=int,
    default=-1,
    show_default=True,
    metavar="BYTES",
    help="Size limit of the bucket (-1: unlimited).",
)
@click.option("--storage", type=click.Choice(["file", "memory"]), default="file", show_default=True)
@click.option("--replicas", type=click.IntRange(1, 5), default=1, show_default=True)
@click.option("--compression", is_flag=True, help="Compress stored chunks (s2).")
@json_option()
@pass_session
def create(
    session: Session,
    bucket: str,
    description: str | None,
    metadata: dict[str, str] | None,
    ttl: float | None,
    max_bytes: int,
    storage: str,
    replicas: int,
    compression: bool,
    as_json: bool,
) -> None:
    """Create an object store named BUCKET."""
    store = session.client().create_store(
        bucket,
        description=description,
        metadata=metadata,
        ttl=ttl,
        max_bytes=max_bytes,
        storage=storage,
        replicas=replicas,
        compression=compression,
    )
    _show_status(store.status(), as_json)


@store_group.command("status")
@click.argument("bucket")
@json_option()
@pass_session
def status(session: Session, bucket: str, as_json: bool) -> None:
    """Show size, limits and settings of BUCKET, and what of it is offloaded to S3 (a pass
    over its meta records)."""
    _show_status(session.store(bucket).status(count_offloaded=True), as_json)


@store_group.command("seal")
@click.argument("bucket")
@pass_session
def seal(session: Session, bucket: str) -> None:
    """Make BUCKET read-only for good."""
    session.store(bucket).seal()
    click.echo(f"sealed store {bucket}")


@store_group.command("rm")
@click.argument("bucket")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_session
def remove(session: Session, bucket: str, yes: bool) -> None:
    """Delete BUCKET and every object in it."""
    client = session.client()
    client.store(bucket)  # a missing bucket is reported before asking
    if not yes:
        click.confirm(f"Delete store {bucket!r} and all its objects?", abort=True, err=True)
    client.delete_store(bucket)
    click.echo(f"deleted store {bucket}")


@store_group.command("compact")
@click.argument("bucket")
@click.option(
    "--min-age",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Leave chunks younger than this alone (an upload may still be running).",
)
@json_option()
@pass_session
def compact(session: Session, bucket: str, min_age: float | None, as_json: bool) -> None:
    """Purge orphaned chunks and report what was reclaimed.

    Orphans are chunks no object refers to, left by interrupted uploads.
    """
    store = session.store(bucket)
    result = store.compact() if min_age is None else store.compact(min_age=min_age)
    if as_json:
        render.emit_json({"bucket": bucket, **dataclasses.asdict(result)})
        return
    click.echo(
        f"compacted {bucket}: purged {len(result.purged_subjects)} orphaned chunk subjects "
        f"({result.purged_messages} messages), reclaimed {render.size(result.reclaimed_bytes)}; "
        f"left {result.skipped_recent} younger than --min-age alone"
    )


COMMANDS = (list_stores, store_group)
