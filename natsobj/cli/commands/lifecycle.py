"""``natsobj store lifecycle BUCKET``: show, set or clear a bucket's lifecycle rules, bring
objects already there under them, and remove the kept versions they expire (docs/lifecycle.md)."""

from __future__ import annotations

import click

from natsobj.aio import lifecycle_apply, version_expiry
from natsobj.cli import render
from natsobj.cli.commands.stores import store_group
from natsobj.cli.exits import CliError, UsageProblem
from natsobj.cli.operands import BucketName
from natsobj.cli.params import json_option
from natsobj.cli.session import Session, pass_session
from natsobj.errors import BadLifecycleRule
from natsobj.lifecycle import LifecycleRule
from natsobj.parsing import format_duration
from natsobj.sync import ObjectStore, run


def _rules(texts: tuple[str, ...]) -> list[LifecycleRule]:
    try:
        return [LifecycleRule.parse(text) for text in texts]
    except BadLifecycleRule as exc:
        raise UsageProblem(exc.message) from None


def _show_rules(bucket: str, rules: list[LifecycleRule]) -> None:
    if not rules:
        click.echo(f"no lifecycle rules on {bucket}: objects expire only when put with a TTL")
        return
    columns = ["#", "PATTERN", "EXPIRE AFTER"]
    on_versions = any(rule.governs_versions and not rule.problem for rule in rules)
    if on_versions:
        columns.append("VERSIONS")
    render.table(
        columns,
        (
            [str(n), rule.pattern, _expire_after(rule)] + ([_versions(rule)] if on_versions else [])
            for n, rule in enumerate(rules, 1)
        ),
        right={"#"},
    )


def _expire_after(rule: LifecycleRule) -> str:
    if rule.problem:
        return f"unusable: {rule.problem}"
    if not rule.governs_current:
        return "-"
    return format_duration(rule.ttl) if rule.ttl else "never"


def _versions(rule: LifecycleRule) -> str:
    """What the rule does to kept versions, in S3's terms."""
    parts = []
    if rule.noncurrent_days is not None:
        parts.append(f"noncurrent {rule.noncurrent_days}d")
    if rule.newer_noncurrent is not None:
        parts.append(f"keep {rule.newer_noncurrent} newer")
    if rule.expired_delete_markers:
        parts.append("expired markers")
    return ", ".join(parts) or "-"


def _sweep(store: ObjectStore, execute: bool, as_json: bool) -> list[dict[str, object]]:
    """The kept versions the rules expire: listed, or (``execute``) removed."""
    planned = run(version_expiry.plan(store.aio))
    if execute:
        planned = run(version_expiry.apply(store.aio, planned))
    rows = [
        {
            "name": r.version.name,
            "version_id": r.version.version_id,
            "delete_marker": r.version.delete_marker,
            "rule": r.rule.pattern,
            "why": r.why,
            "removed": r.done,
            "skipped": r.skipped,
            "failed": r.failed,
        }
        for r in planned
    ]
    if as_json:
        return rows
    verb = "removed" if execute else "would remove"
    for r in planned:
        what = f"{'delete marker' if r.version.delete_marker else 'version'} {r.version.version_id}"
        where = f"of {render.shell_escape(r.version.name)} (rule {r.rule.pattern}: {r.why})"
        if r.failed:
            click.echo(f"natsobj: not removed: {render.shell_escape(r.failed)}", err=True)
        elif r.skipped:
            click.echo(f"skipped {what} {where}: {r.skipped}")
        else:
            click.echo(f"{verb} {what} {where}")
    if planned and not execute:
        click.echo(f"{len(planned)} version(s); run again with --yes to remove them")
    return rows


def _apply(store: ObjectStore, execute: bool, as_json: bool) -> list[dict[str, object]]:
    planned = run(lifecycle_apply.plan(store.aio))
    if execute:
        planned = run(lifecycle_apply.apply(store.aio, planned))
    rows = [
        {
            "name": r.info.name,
            "rule": r.rule.pattern,
            "ttl_seconds": int(r.ttl.total_seconds()),
            "restamped": r.done,
            "skipped": r.skipped,
            "failed": r.failed,
        }
        for r in planned
    ]
    if as_json:
        return rows
    verb = "restamped" if execute else "would restamp"
    for r in planned:
        if r.failed:
            click.echo(f"natsobj: not restamped: {render.shell_escape(r.failed)}", err=True)
            continue
        state = f"skipped: {r.skipped}" if r.skipped else verb
        click.echo(
            f"{state} {render.shell_escape(r.info.name)} (rule {r.rule}: expires in"
            f" {format_duration(r.ttl)})"
        )
    if not planned:
        click.echo("nothing to restamp: every object a rule expires already has an expiry")
    elif not execute:
        click.echo(f"{len(planned)} object(s); run again with --yes to restamp them")
    return rows


@store_group.command("lifecycle")
@click.argument("bucket", type=BucketName())
@click.option(
    "--set",
    "set_rules",
    multiple=True,
    metavar="GLOB=DURATION",
    help="Replace the rules, in order (the first match wins): 'tmp/**=7d', 'reports/**=never';"
    " for kept versions add (or give alone) 'noncurrent:30d', 'newer-noncurrent:3',"
    " 'expired-markers', comma-separated. Repeatable.",
)
@click.option("--clear", is_flag=True, help="Remove every rule.")
@click.option(
    "--apply",
    is_flag=True,
    help="List the objects a rule says should expire that carry no expiry (written before the"
    " rule, or by another client), and the kept versions and delete markers a rule expires; a"
    " dry run unless --yes.",
)
@click.option(
    "--yes",
    "--execute",
    "execute",
    is_flag=True,
    help="With --apply: restamp them (the same bytes and digest put again, with the time left"
    " of their rule's TTL counted from when they were written), and remove the expired"
    " versions (a locked one never).",
)
@json_option()
@pass_session
def lifecycle(
    session: Session,
    bucket: str,
    set_rules: tuple[str, ...],
    clear: bool,
    apply: bool,
    execute: bool,
    as_json: bool,
) -> None:
    """Show BUCKET's lifecycle rules; --set or --clear them; --apply them to objects already
    there and to kept versions. Every natsobj put takes the first matching rule's TTL unless it
    names one; a versioned bucket's kept versions are removed by --apply as their rule says."""
    if set_rules and clear:
        raise UsageProblem("give --set or --clear, not both")
    if execute and not apply:
        raise UsageProblem("--yes restamps what --apply finds: give --apply too")
    store = session.store(bucket)
    if set_rules or clear:
        rules = store.set_lifecycle_rules(_rules(set_rules))
    else:
        rules = store.lifecycle_rules()
    restamps = _apply(store, execute, as_json) if apply else None
    on_versions = apply and any(rule.governs_versions for rule in rules)
    removals = _sweep(store, execute, as_json) if on_versions else None
    if as_json:
        doc: dict[str, object] = {
            "bucket": bucket,
            "rules": [rule.to_json() for rule in rules],
        }
        if restamps is not None:
            doc["apply"] = restamps
        if removals is not None:
            doc["versions"] = removals
        render.emit_json(doc)
    elif not apply:
        _show_rules(bucket, rules)
    failed = sum(1 for row in restamps or () if row["failed"])
    unremoved = sum(1 for row in removals or () if row["failed"])
    if failed or unremoved:
        raise CliError(
            f"bucket {bucket!r}: {failed} object(s) could not be restamped and {unremoved}"
            " version(s) could not be removed (said above); the rest were done"
        )


COMMANDS = ()  # a sub-command of ``natsobj store``
