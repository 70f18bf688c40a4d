"""``natsobj watch``: follow a bucket's changes live, one line (or JSON line) per change."""

from __future__ import annotations

import click

from natsobj.cli import render
from natsobj.cli.operands import object_operands
from natsobj.cli.params import json_option, table_option
from natsobj.cli.session import Session, pass_session
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.operation_options import EARLIEST
from natsobj.version_events import Change, LockEvent, VersionRemoved


def _event(info: ObjectInfo) -> str:
    if info.deleted:
        return "DEL"
    return "LINK" if info.link is not None else "PUT"


def _line(change: Change) -> str:
    if isinstance(change, LockEvent):
        return _lock_line(change)
    if isinstance(change, VersionRemoved):
        name, version = render.shell_escape(change.name), f"version {change.version_id}"
        return "  ".join([render.when(change.mtime), "RMV ", name, version, "removed for good"])
    columns = [render.when(change.mtime), f"{_event(change):<4}", render.display_name(change)]
    if change.link is None and not change.deleted:
        columns += [render.size(change.size), render.short_digest(change.digest)]
    return "  ".join(columns)


def _lock_line(event: LockEvent) -> str:
    """A lock change's line (--include-version-events): the version and its new lock."""
    lock, parts = event.lock, []
    if lock is None:
        parts.append(event.problem)
    elif lock.retain_until is not None and lock.mode is not None:
        parts.append(f"{lock.mode.value.lower()} until {render.when(lock.retain_until)}")
    if lock is not None and lock.legal_hold:
        parts.append("legal hold")
    word = "UNLOCK" if event.unlocked else "LOCK"
    columns = [render.when(event.mtime), word, render.shell_escape(event.name)]
    return "  ".join([*columns, f"version {event.version_id}", ", ".join(parts)])


@click.command("watch")
@object_operands("bucket", "prefix", required=1)
@table_option("follow", "start")
@click.option(
    "--history",
    is_flag=True,
    help="Replay every recorded change first, then follow (--start earliest).",
)
@click.option(
    "--glob",
    "globs",
    multiple=True,
    metavar="PATTERN",
    help="Only names matching this glob, repeatable ('*' stays within one '/' segment, '**'"
    " crosses them: 'reports/**.csv').",
)
@click.option(
    "--regex",
    "regexes",
    multiple=True,
    metavar="REGEX",
    help="Only names this regular expression matches in full, repeatable.",
)
@table_option("follow", "include_deletes")
@table_option("follow", "include_version_events")
@click.option(
    "--ignore-deletes",
    is_flag=True,
    hidden=True,
    help="Deprecated spelling of --no-include-deletes.",
)
@click.option("--count", type=click.IntRange(min=1), metavar="N", help="Exit after N changes.")
@json_option()
@pass_session
def watch(
    session: Session,
    bucket: str,
    prefix: str | None,
    start: str | int,
    history: bool,
    globs: tuple[str, ...],
    regexes: tuple[str, ...],
    include_deletes: bool,
    include_version_events: bool,
    ignore_deletes: bool,
    count: int | None,
    as_json: bool,
) -> None:
    """Print changes to BUCKET (below PREFIX, when given) live, until Ctrl-C or --count."""
    try:
        matchers = [NameMatcher.from_options(glob=g) for g in globs] + [
            NameMatcher.from_options(regex=r) for r in regexes
        ]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--regex") from None
    if ignore_deletes:
        click.echo(
            "natsobj: warning: --ignore-deletes is deprecated and will be removed in the next"
            " release; use --no-include-deletes",
            err=True,
        )
        include_deletes = False
    store = session.store(bucket)
    seen = 0
    with store.watch(
        start=EARLIEST if history else start,
        include_deletes=include_deletes,
        include_version_events=include_version_events,
    ) as watcher:
        click.echo(f"watching {bucket} (Ctrl-C to stop)", err=True)
        try:
            for info in watcher:
                if matchers and not any(m.matches(info.name) for m in matchers):
                    continue
                if prefix and not info.name.startswith(prefix):
                    continue
                if as_json:
                    render.emit_json_line(info.as_dict())
                else:
                    click.echo(_line(info))
                seen += 1
                if count is not None and seen >= count:
                    return
        except KeyboardInterrupt:
            return


COMMANDS = (watch,)
