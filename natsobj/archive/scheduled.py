"""One catch-up pass, or one offload pass, from blocking code: what a scheduled Airflow task
or Dagster op runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from natsobj.archive.archiver import Archiver
from natsobj.archive.target import ArchiveTarget
from natsobj.archive.targets import ArchiveTargets
from natsobj.archive.tiering import OffloadPolicy
from natsobj.operation_options import ARCHIVE, Face
from natsobj.settings import ConnectionSettings


def archive_pass(
    settings: ConnectionSettings,
    bucket: str,
    target: ArchiveTarget | ArchiveTargets,
    *,
    give_up_after: float | str | timedelta | None = None,
    **archiver_options: Any,
) -> dict[str, Any]:
    """Archive everything new in ``bucket`` and return a JSON-safe summary. Failures are
    retried with backoff for ``give_up_after`` (any spelling of the table's row; None: its
    default), then raised to fail the task."""
    row = ARCHIVE["give_up_after"]
    limit: timedelta = row.parse(give_up_after) or row.default_for(Face.PYTHON)
    from natsobj import aio
    from natsobj.sync import run

    async def body() -> dict[str, Any]:
        async with await aio.connect(settings) as client:
            store = await client.store(bucket)
            archiver = Archiver(store, target, **archiver_options)
            totals = await archiver.run(once=True, give_up_after=limit.total_seconds())
            return {
                "bucket": bucket,
                "target": target.url,
                "cursor": archiver.committed,
                **totals.as_dict(),
            }

    return run(body())


def offload_pass(
    settings: ConnectionSettings,
    bucket: str,
    target: ArchiveTarget | ArchiveTargets,
    policy: OffloadPolicy,
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Offload what ``policy`` selects from ``bucket`` and return a JSON-safe summary."""
    from natsobj import aio
    from natsobj.archive.tiering import offload
    from natsobj.sync import run

    async def body() -> dict[str, Any]:
        async with await aio.connect(settings) as client:
            result = await offload(await client.store(bucket), target, policy, dry_run=dry_run)
            return {
                "bucket": bucket,
                "target": target.url,
                "dry_run": dry_run,
                "offloaded": [info.name for info in result.offloaded],
                "bytes": result.bytes,
                "skipped": [{"name": name, "reason": why} for name, why in result.skipped],
            }

    return run(body())
