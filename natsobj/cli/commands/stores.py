"""``natsobj stores`` and ``natsobj store create|update|status|seal|rm|compact``."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import click

from natsobj.cli import render
from natsobj.cli.exits import UsageProblem
from natsobj.cli.operands import BucketName
from natsobj.cli.params import ByteSize, Duration, json_option, metadata_option
from natsobj.cli.session import Session, pass_session
from natsobj.model import StoreStatus
from natsobj.parsing import format_duration
from natsobj.store_config import SETTING_FIELDS, STORAGE_TYPES, STORE_SETTINGS, Placement

# How a store setting reads on the command line, beyond its name and help (from the table);
# a setting not listed here is a plain --text option.
_OPTION_KINDS: dict[str, dict[str, Any]] = {
    "ttl": {"type": Duration(), "metavar": "DURATION"},
    "max_bytes": {"type": ByteSize(), "metavar": "BYTES"},
    "storage": {"type": click.Choice(STORAGE_TYPES)},
    "replicas": {"type": click.IntRange(1, 5)},
    "delete_marker_ttl": {"type": Duration(), "metavar": "DURATION"},
}
# Settings that are on/off flags (--compression/--no-compression); None when not given.
_FLAGS = ("compression", "allow_msg_ttl")
_SHORT = {"description": "-d"}


def _ttl(status: StoreStatus) -> str:
    return f"{status.ttl.total_seconds():g}s" if status.ttl else ""


def _expiry(status: StoreStatus) -> str:
    """Whether objects can expire (docs/lifecycle.md), and how long expiry markers live."""
    config = status.stream_info.config
    if not config.get("allow_msg_ttl"):
        return "off (natsobj store update BUCKET --allow-msg-ttl)"
    marker = int(config.get("subject_delete_marker_ttl") or 0)
    if not marker:
        return "per-object TTLs (no delete markers: watchers do not see expiries)"
    shown = format_duration(timedelta(microseconds=marker / 1000))
    return f"per-object TTLs, delete markers {shown} (the shortest TTL)"


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
        ("expiry", _expiry(status)),
        ("sealed", "yes" if status.sealed else "no"),
    ]
    if status.placement:
        placement = Placement.coerce(status.placement)
        shown = [f"cluster {placement.cluster}"] if placement and placement.cluster else []
        shown += [f"tags {','.join(placement.tags)}"] if placement and placement.tags else []
        pairs.append(("placement", ", ".join(shown)))
    if status.offloaded_objects is not None and status.offloaded_bytes is not None:
        pairs.append(
            (
                "offloaded to S3",
                f"{status.offloaded_objects} objects, {render.size(status.offloaded_bytes)}",
            )
        )
    pairs += [(f"metadata {k}", v) for k, v in sorted(status.metadata.items())]
    render.fields(pairs)


def _setting_options(name: str, *, update: bool) -> list[Callable[[Any], Any]]:
    """The option(s) of one store setting: its flag from its name, its help from the table;
    ``create`` shows the default, ``update`` leaves what is not given unchanged."""
    meta = SETTING_FIELDS[name]
    help_text = meta.metadata["help"] + (" Unchanged when not given." if update else "")
    if name == "metadata":
        return [metadata_option(help_text + " Repeatable.")]
    if name == "placement":
        return [
            click.option(
                "--placement-cluster", metavar="CLUSTER", help="Cluster the replicas are placed in."
            ),
            click.option(
                "--placement-tags",
                multiple=True,
                metavar="TAG[,TAG]",
                help="Server tags the replicas must be placed on; repeatable.",
            ),
        ]
    flag = "--" + name.replace("_", "-")
    if name in _FLAGS:
        return [click.option(f"{flag}/--no-{flag[2:]}", name, default=None, help=help_text)]
    default = meta.default if meta.default is not dataclasses.MISSING else None
    shown = {} if update or default in (None, "") else {"default": default, "show_default": True}
    return [
        click.option(
            flag,
            *filter(None, [_SHORT.get(name)]),
            name,
            help=help_text,
            **_OPTION_KINDS.get(name, {}),
            **shown,
        )
    ]


def _placement(cluster: str | None, tags: tuple[str, ...]) -> Placement | None:
    split = tuple(t.strip() for group in tags for t in group.split(",") if t.strip())
    return Placement(cluster or None, split) or None


def store_settings_options(*, update: bool) -> Callable[[Callable[..., Any]], Any]:
    """One option per store setting (``STORE_SETTINGS``, the one table), handed to the
    command as ``settings``: the keywords ``create_store``/``update_store`` take, with
    only the options given."""

    def decorate(command: Callable[..., Any]) -> Any:
        @functools.wraps(command)
        def with_settings(*args: Any, **kwargs: Any) -> Any:
            placement = _placement(kwargs.pop("placement_cluster"), kwargs.pop("placement_tags"))
            settings = {name: kwargs.pop(name) for name in STORE_SETTINGS if name in kwargs}
            settings["placement"] = placement
            given = {k: v for k, v in settings.items() if v is not None}
            return command(*args, settings=given, **kwargs)

        for name in reversed(STORE_SETTINGS):
            for option in reversed(_setting_options(name, update=update)):
                with_settings = option(with_settings)
        return with_settings

    return decorate


@store_group.command("create")
@click.argument("bucket", type=BucketName())
@store_settings_options(update=False)
@json_option()
@pass_session
def create(session: Session, bucket: str, settings: dict[str, Any], as_json: bool) -> None:
    """Create an object store named BUCKET."""
    store = session.client().create_store(bucket, **settings)
    _show_status(store.status(), as_json)


@store_group.command("update")
@click.argument("bucket", type=BucketName())
@store_settings_options(update=True)
@json_option()
@pass_session
def update(session: Session, bucket: str, settings: dict[str, Any], as_json: bool) -> None:
    """Change the settings given of the object store BUCKET; the others are kept."""
    if not settings:
        raise UsageProblem("name at least one setting to change, e.g. --description TEXT")
    store = session.client().update_store(bucket, **settings)
    _show_status(store.status(), as_json)


@store_group.command("status")
@click.argument("bucket", type=BucketName())
@json_option()
@pass_session
def status(session: Session, bucket: str, as_json: bool) -> None:
    """Show size, limits and settings of BUCKET, and what of it is offloaded to S3 (a pass
    over its meta records)."""
    _show_status(session.store(bucket).status(count_offloaded=True), as_json)


@store_group.command("seal")
@click.argument("bucket", type=BucketName())
@pass_session
def seal(session: Session, bucket: str) -> None:
    """Make BUCKET read-only for good."""
    session.store(bucket).seal()
    click.echo(f"sealed store {bucket}")


@store_group.command("rm")
@click.argument("bucket", type=BucketName())
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
@click.argument("bucket", type=BucketName())
@click.option(
    "--min-age",
    type=Duration(),
    default=None,
    metavar="DURATION",
    help="Leave chunks younger than this alone (an upload may still be running): 90s, 10m,"
    " 1h; a bare number is seconds.",
)
@json_option()
@pass_session
def compact(session: Session, bucket: str, min_age: timedelta | None, as_json: bool) -> None:
    """Purge orphaned chunks and report what was reclaimed.

    Orphans are chunks no object refers to, left by interrupted uploads.
    """
    store = session.store(bucket)
    result = store.compact() if min_age is None else store.compact(min_age=min_age.total_seconds())
    if as_json:
        render.emit_json({"bucket": bucket, **dataclasses.asdict(result)})
        return
    click.echo(
        f"compacted {bucket}: purged {len(result.purged_subjects)} orphaned chunk subjects "
        f"({result.purged_messages} messages), reclaimed {render.size(result.reclaimed_bytes)}; "
        f"left {result.skipped_recent} younger than --min-age alone"
    )


# What ``nats obj`` users type: ``nats obj ls`` lists the buckets, ``nats obj add`` creates
# one, ``nats obj info`` shows one.
store_group.add_command(list_stores, "ls")
store_group.add_command(create, "add")
store_group.add_command(status, "info")

COMMANDS = (list_stores, store_group)
