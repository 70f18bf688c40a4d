"""One catch-up pass from blocking code: what a scheduled Airflow task or Dagster op runs."""

from __future__ import annotations

from typing import Any

from natsobj.archive.archiver import Archiver
from natsobj.archive.target import ArchiveTarget
from natsobj.settings import ConnectionSettings

DEFAULT_GIVE_UP_AFTER = 300.0


def archive_pass(
    settings: ConnectionSettings,
    bucket: str,
    target: ArchiveTarget,
    *,
    give_up_after: float = DEFAULT_GIVE_UP_AFTER,
    **archiver_options: Any,
) -> dict[str, Any]:
    """Archive everything new in ``bucket`` and return a JSON-safe summary. Failures are
    retried with backoff for ``give_up_after`` seconds, then raised to fail the task."""
    from natsobj import aio
    from natsobj.sync import run

    async def body() -> dict[str, Any]:
        async with await aio.connect(settings) as client:
            store = await client.store(bucket)
            archiver = Archiver(store, target, **archiver_options)
            totals = await archiver.run(once=True, give_up_after=give_up_after)
            return {
                "bucket": bucket,
                "target": target.url,
                "cursor": archiver.committed,
                **totals.as_dict(),
            }

    return run(body())
