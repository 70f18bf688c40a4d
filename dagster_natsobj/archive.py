"""A Dagster job for scheduled backups: one catch-up pass of a bucket's S3 archive.

The S3 endpoint and credentials come from the AWS environment of the run worker
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``), or from the op config's
``endpoint``/``region``. The run's output metadata shows the cursor and totals, never keys.
"""

from typing import Any  # no "from __future__ import annotations": Dagster reads the config type

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, Output, job, op

from dagster_natsobj.resource import NatsObjectStoreResource


class NatsArchiveConfig(Config):
    bucket: str
    target: str  # s3://bucket/prefix
    endpoint: str | None = None
    region: str | None = None
    give_up_after: float = 300.0


def make_nats_archive_job(
    name: str = "nats_archive", *, resource_key: str = "nats"
) -> JobDefinition:
    """A job with one op archiving ``config.bucket`` to ``config.target``; it needs a
    ``NatsObjectStoreResource`` under ``resource_key``."""

    @op(name=f"{name}_pass", required_resource_keys={resource_key})
    def archive_op(context: OpExecutionContext, config: NatsArchiveConfig) -> Output[dict]:
        from natsobj.archive import ArchiveTarget, S3Options
        from natsobj.archive.scheduled import archive_pass

        resource: NatsObjectStoreResource = getattr(context.resources, resource_key)
        target = ArchiveTarget(
            config.target, S3Options(endpoint=config.endpoint, region=config.region)
        )
        summary: dict[str, Any] = archive_pass(
            resource.settings(), config.bucket, target, give_up_after=config.give_up_after
        )
        for sequence in summary["skipped"]:
            context.log.warning(f"sequence {sequence} was gone from NATS before it was archived")
        return Output(
            summary,
            metadata={
                "target": MetadataValue.url(summary["target"]),
                "cursor": summary["cursor"],
                "versions": summary["versions"],
                "bytes": MetadataValue.int(summary["bytes"]),
                "skipped": MetadataValue.json(summary["skipped"]),
            },
        )

    @job(name=name, description="Copy every new version of a bucket to its S3 archive.")
    def archive_job() -> None:
        archive_op()

    return archive_job
