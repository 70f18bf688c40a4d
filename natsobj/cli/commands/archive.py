"""``natsobj archive``: continuous backup of a bucket to S3, its status, restore and verify.

The S3 endpoint and credentials come from the standard AWS chain (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``); ``--endpoint``, ``--region`` and ``--profile``
override it, and a target URL may name its own (``s3://b/p?endpoint=...&region=...``). Keys
are never accepted on the command line, where ``ps`` would show them. Several targets
(``--to`` repeated) take a ``--strategy``: replicate, failover or shard.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from natsobj import aio
from natsobj.cli import render
from natsobj.cli.exits import CliError, ExitCode, UsageProblem
from natsobj.cli.operands import BucketName, object_operands
from natsobj.cli.params import (
    ByteSize,
    Duration,
    dry_run_option,
    json_option,
    progress_option,
    table_option,
)
from natsobj.cli.progress import meter
from natsobj.cli.session import Session, pass_session

T = TypeVar("T")


STRATEGY_CHOICE = click.Choice(["replicate", "failover", "shard"])


def s3_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option(
                "--strategy",
                type=STRATEGY_CHOICE,
                help="With several targets: write to all (replicate), to the first that "
                "answers (failover), or spread by weight (shard).",
            ),
            click.option("--endpoint", metavar="URL", help="S3 endpoint (or $AWS_ENDPOINT_URL)."),
            click.option("--region", help="S3 region (or $AWS_REGION)."),
            click.option("--profile", help="AWS profile for the credentials (or $AWS_PROFILE)."),
        ]
    ):
        command = option(command)
    return command


def target_option(required: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--to",
        "--target",
        "urls",
        multiple=True,
        required=required,
        metavar="s3://BUCKET/PREFIX[=WEIGHT]",
        help="Archive target; repeat for several (see --strategy)."
        + ("" if required else " Default: the one recorded."),
    )


def _target(
    urls: str | tuple[str, ...],
    strategy: str | None,
    endpoint: str | None,
    region: str | None,
    profile: str | None,
) -> Any:
    """``ArchiveTargets`` from repeated ``--to`` (or the configuration recorded)."""
    from natsobj.archive import ArchiveTargets, S3Options  # MissingExtra names the extra

    options = S3Options(endpoint=endpoint, region=region, profile=profile)
    try:
        return ArchiveTargets.parse(urls, strategy, options)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from exc


def _with_client(session: Session, work: Callable[[aio.Client], Awaitable[T]]) -> T:
    async def body() -> T:
        async with await aio.connect(session.settings) as client:
            return await work(client)

    return asyncio.run(body())


def _show_archive_warnings(ctx: click.Context) -> None:
    """Retries and skipped versions are what an operator of a long run needs to see."""
    logger = logging.getLogger("natsobj.archive")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("natsobj archive: %(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False  # --debug's handler on "natsobj" would print them twice

    def restore() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate

    ctx.call_on_close(restore)


def _parse_time(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageProblem(f"--at {value!r} is not an ISO 8601 time") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@click.group("archive")
def archive() -> None:
    """Back a bucket up to S3-compatible storage, and restore it from there."""


@archive.command("run")
@click.argument("bucket", type=BucketName())
@target_option(required=True)
@click.option("--once", is_flag=True, help="Catch up, then exit (for schedulers).")
@table_option(
    "archive",
    "give_up_after",
    help_text="With --once, fail after this long of S3 or NATS errors (a follower without"
    " --once retries until stopped).",
)
@click.option(
    "--small-object",
    type=ByteSize(),
    default="1MiB",
    show_default=True,
    metavar="SIZE",
    help="Versions smaller than this go into packs (bytes, or 256KiB, 4MiB).",
)
@click.option(
    "--pack-age",
    type=Duration(),
    default="30s",
    show_default=True,
    metavar="DURATION",
    help="Upload a pack once its oldest version waited this long (45s, 5m; a bare number is"
    " seconds).",
)
@s3_options
@progress_option()
@click.pass_context
def run(
    ctx: click.Context,
    bucket: str,
    urls: tuple[str, ...],
    once: bool,
    give_up_after: timedelta,
    small_object: int,
    pack_age: timedelta,
    progress: bool | None,
    **s3: str | None,
) -> None:
    """Archive every version of BUCKET to the target: follows until stopped (Ctrl-C, SIGTERM),
    or with --once catches up and exits (failing after --give-up-after of S3 or NATS errors)."""
    from natsobj.archive import Archiver

    session: Session = ctx.obj
    target = _target(urls, **s3)
    _show_archive_warnings(ctx)

    with meter(progress) as bar, bar.task(f"archive {bucket}", None) as advance:

        async def work(client: aio.Client) -> Any:
            store = await client.store(bucket)
            archiver = Archiver(
                store,
                target,
                small_object=small_object,
                pack_age=pack_age.total_seconds(),
                on_record=lambda record: advance(record.length if record.kind == "put" else 0),
            )
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            # a scheduled --once pass fails after a while; a follower retries until stopped
            limit = give_up_after.total_seconds() if once else None
            totals = await archiver.run(once=once, stop=stop, give_up_after=limit)
            return totals, archiver.committed

        totals, cursor = _with_client(session, work)
    click.echo(
        f"archived {bucket} to {target.url} through sequence {cursor}: "
        f"{totals.versions} versions, {render.size(totals.bytes)}, "
        f"{totals.meta_updates} meta updates, {totals.deletes} deletes, "
        f"{totals.expired} expiries"
    )
    for sequence in totals.skipped:
        click.echo(f"skipped sequence {sequence}: its bytes were gone from NATS", err=True)


@archive.command("status")
@click.argument("bucket", type=BucketName())
@target_option(required=False)
@s3_options
@json_option()
@pass_session
def status(
    session: Session, bucket: str, urls: tuple[str, ...], as_json: bool, **s3: str | None
) -> None:
    """Cursor, lag (in sequences and seconds), what the archive of BUCKET holds, and how
    much of BUCKET is offloaded to it."""
    from natsobj.archive import archive_status
    from natsobj.archive.status import target_of

    async def work(client: aio.Client) -> Any:
        store = await client.store(bucket)
        where = urls or target_of((await store.status()).metadata, bucket)
        return await archive_status(store, _target(where, **s3))

    state = _with_client(session, work)
    if as_json:
        render.emit_json(state.as_dict())
        return
    render.fields(
        [
            ("bucket", state.bucket),
            ("target", state.target),
            ("cursor", str(state.cursor)),
            ("stream last sequence", str(state.last_sequence)),
            ("lag", f"{state.lag_sequences} sequences, {state.lag_seconds:.1f} s"),
            ("versions archived", str(state.versions)),
            ("bytes archived", render.size(state.bytes)),
            ("skipped", ", ".join(map(str, state.skipped)) or "none"),
            ("updated", state.updated_at or "never"),
            (
                "offloaded",
                f"{state.offloaded_objects} objects, {render.size(state.offloaded_bytes)}",
            ),
        ]
    )


@archive.command("restore")
@click.argument("urls", nargs=-1, required=True, metavar="s3://BUCKET/PREFIX...")
@click.option("--to", "bucket", required=True, help="A new or empty bucket to restore into.")
@click.option("--at", "at", metavar="TIME", help="Restore the store as it was then (ISO 8601).")
@s3_options
@progress_option()
@pass_session
def restore(
    session: Session,
    urls: tuple[str, ...],
    bucket: str,
    at: str | None,
    progress: bool | None,
    **s3: str | None,
) -> None:
    """Rebuild a bucket from the archive (on several targets: give them all, with the
    --strategy they were written with): the latest versions, or as of --at."""
    from natsobj.archive import restore as restore_archive

    target = _target(urls, **s3)
    moment = _parse_time(at) if at else None
    with meter(progress) as bar:
        result = _with_client(
            session,
            lambda client: restore_archive(client, target, bucket, at=moment, task=bar.task),
        )
    click.echo(
        f"restored {result.objects} objects ({render.size(result.bytes)}) and {result.links} "
        f"links into {bucket}"
    )
    for record in result.unrestorable:
        click.echo(
            f"not restored: {render.shell_escape(record.name)}"
            f" (sequence {record.sequence} was never archived)",
            err=True,
        )


@archive.command("verify")
@click.argument("urls", nargs=-1, required=True, metavar="s3://BUCKET/PREFIX...")
@s3_options
@progress_option()
def verify(urls: tuple[str, ...], progress: bool | None, **s3: str | None) -> None:
    """Check every archived version's bytes against its digest, on every target given (exit
    4 on a mismatch)."""
    from natsobj.archive import verify as verify_archive

    target = _target(urls, **s3)
    with meter(progress) as bar, bar.task("verify", None) as advance:
        report = asyncio.run(
            verify_archive(target, on_checked=lambda record: advance(record.length))
        )
    for record, problem in report.bad:
        click.echo(
            f"BAD {render.shell_escape(record.name)} (sequence {record.sequence}): {problem}",
            err=True,
        )
    click.echo(
        f"checked {report.checked} versions ({render.size(report.bytes)}): "
        f"{len(report.bad)} bad, {report.duplicates} indexed twice, "
        f"{len(report.skipped)} skipped when archived"
    )
    if not report.ok:
        raise CliError(f"archive {target.url} failed verification", ExitCode.DIGEST_MISMATCH)


@archive.command("offload")
@click.argument("bucket", type=BucketName())
@target_option(required=False)
@table_option("offload", "older_than", help_text="Not written for this long (30d, 12h).")
@table_option("offload", "larger_than", help_text="Only objects over this size (100MB).")
@click.option("--glob", help="Only names matching this path-aware glob (raw/**/*.parquet).")
@click.option("--name", "names", multiple=True, help="Only this object (repeatable).")
@table_option("offload", "expiry_margin")
@table_option(
    "offload",
    "noncurrent_older_than",
    help_text="Also offload kept versions noncurrent this long (30d): S3's noncurrent transition.",
)
@dry_run_option("Report what would be offloaded; change nothing.")
@s3_options
@json_option()
@pass_session
def offload(
    session: Session,
    bucket: str,
    urls: tuple[str, ...],
    older_than: timedelta | None,
    larger_than: int | None,
    glob: str | None,
    names: tuple[str, ...],
    expiry_margin: timedelta,
    noncurrent_older_than: timedelta | None,
    dry_run: bool,
    as_json: bool,
    **s3: str | None,
) -> None:
    """Purge archived objects' chunks from JetStream; their meta records stay and reads go
    through to S3. Only versions the archive holds and verifies are offloaded."""
    from natsobj.archive.status import target_of
    from natsobj.archive.tiering import OffloadPolicy
    from natsobj.archive.tiering import offload as offload_objects

    policy = OffloadPolicy(
        older_than=older_than,
        larger_than=larger_than,
        glob=glob,
        names=frozenset(names) if names else None,
        expiry_margin=expiry_margin,
        noncurrent_older_than=noncurrent_older_than,
    )

    async def work(client: aio.Client) -> Any:
        store = await client.store(bucket)
        where = urls or target_of((await store.status()).metadata, bucket)
        return await offload_objects(store, _target(where, **s3), policy, dry_run=dry_run)

    result = _with_client(session, work)
    if as_json:
        render.emit_json(
            {
                "dry_run": result.dry_run,
                "offloaded": [info.name for info in result.offloaded],
                "noncurrent": [
                    {"name": info.name, "version_id": info.nuid} for info in result.noncurrent
                ],
                "bytes": result.bytes,
                "skipped": [{"name": name, "reason": why} for name, why in result.skipped],
            }
        )
        return
    verb = "would offload" if dry_run else "offloaded"
    for info in result.offloaded:
        click.echo(f"{verb} {render.shell_escape(info.name)} ({render.size(info.size)})")
    for info in result.noncurrent:
        click.echo(
            f"{verb} {render.shell_escape(info.name)} version {info.nuid}"
            f" ({render.size(info.size)})"
        )
    for name, why in result.skipped:
        click.echo(f"skipped {render.shell_escape(name)}: {render.visible(why)}", err=True)
    versions = f" and {len(result.noncurrent)} noncurrent versions" if result.noncurrent else ""
    click.echo(f"{verb} {len(result.offloaded)} objects{versions}, {render.size(result.bytes)}")


@archive.command("rehydrate")
@object_operands("bucket", "names", required=2, variadic=True)
@pass_session
def rehydrate(session: Session, bucket: str, names: tuple[str, ...]) -> None:
    """Bring offloaded objects' bytes back from S3 into JetStream (digest verified)."""
    from natsobj.archive.tiering import rehydrate as rehydrate_object

    async def work(client: aio.Client) -> list[Any]:
        store = await client.store(bucket)
        return [await rehydrate_object(store, name) for name in names]

    for info in _with_client(session, work):
        click.echo(f"rehydrated {render.shell_escape(info.name)} ({render.size(info.size)})")


COMMANDS = (archive,)
