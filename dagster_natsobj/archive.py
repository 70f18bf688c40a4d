"""Dagster jobs for scheduled backups (one catch-up pass of a bucket's S3 archive) and for
tiering (one offload pass).

The S3 endpoint and credentials come from the AWS environment of the run worker
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``), or from the op config's
``endpoint``/``region``. The run's output metadata shows the cursor and totals, never keys.
"""

from typing import Any  # no "from __future__ import annotations": Dagster reads the config type

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, Output, job, op

from dagster_natsobj.resource import NatsObjectStoreResource


class _ArchiveTargetConfig(Config):
    """Where a bucket's archive lives: the fields both jobs share."""

    bucket: str
    target: str  # s3://bucket/prefix
    # more targets after ``target`` (s3://b/p[=WEIGHT]) and how writes spread over them
    more_targets: list[str] = []
    strategy: str | None = None  # replicate, failover or shard
    endpoint: str | None = None
    region: str | None = None

    def targets(self) -> Any:
        """The ``natsobj.archive.ArchiveTargets`` these fields name."""
        from natsobj.archive import ArchiveTargets, S3Options

        return ArchiveTargets.parse(
            [self.target, *self.more_targets],
            self.strategy,
            S3Options(endpoint=self.endpoint, region=self.region),
        )


class NatsArchiveConfig(_ArchiveTargetConfig):
    give_up_after: float = 300.0


def make_nats_archive_job(
    name: str = "nats_archive", *, resource_key: str = "nats"
) -> JobDefinition:
    """A job with one op archiving ``config.bucket`` to ``config.target``; it needs a
    ``NatsObjectStoreResource`` under ``resource_key``."""

    @op(name=f"{name}_pass", required_resource_keys={resource_key})
    def archive_op(context: OpExecutionContext, config: NatsArchiveConfig) -> Output[dict]:
        from natsobj.archive.scheduled import archive_pass

        resource: NatsObjectStoreResource = getattr(context.resources, resource_key)
        summary: dict[str, Any] = archive_pass(
            resource.settings(), config.bucket, config.targets(), give_up_after=config.give_up_after
        )
        for sequence in summary["skipped"]:
            context.log.warning(f"sequence {sequence} was gone from NATS before it was archived")
        return Output(
            summary,
            metadata={
                "target": MetadataValue.text(summary["target"]),
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


class NatsOffloadConfig(_ArchiveTargetConfig):
    older_than_days: float | None = None  # from the version's mtime
    larger_than: int | None = None  # bytes
    glob: str | None = None  # path-aware, as natsobj.matching
    names: list[str] | None = None
    # never offload an object whose TTL runs out sooner; None: the archive's default, a day
    expiry_margin_hours: float | None = None
    dry_run: bool = False


def make_nats_offload_job(
    name: str = "nats_offload", *, resource_key: str = "nats"
) -> JobDefinition:
    """A job with one op offloading the cold objects of ``config.bucket`` to its archive
    (docs/archive.md, "Tiering"); assets stored there keep loading through the IO manager."""

    @op(name=f"{name}_pass", required_resource_keys={resource_key})
    def offload_op(context: OpExecutionContext, config: NatsOffloadConfig) -> Output[dict]:
        from datetime import timedelta

        from natsobj.archive.scheduled import offload_pass
        from natsobj.archive.tiering import DEFAULT_EXPIRY_MARGIN, OffloadPolicy

        resource: NatsObjectStoreResource = getattr(context.resources, resource_key)
        policy = OffloadPolicy(
            older_than=timedelta(days=config.older_than_days)
            if config.older_than_days is not None
            else None,
            larger_than=config.larger_than,
            glob=config.glob,
            names=frozenset(config.names) if config.names is not None else None,
            expiry_margin=DEFAULT_EXPIRY_MARGIN
            if config.expiry_margin_hours is None
            else timedelta(hours=config.expiry_margin_hours),
        )
        summary: dict[str, Any] = offload_pass(
            resource.settings(), config.bucket, config.targets(), policy, dry_run=config.dry_run
        )
        for skipped in summary["skipped"]:
            context.log.info(f"not offloaded: {skipped['name']} ({skipped['reason']})")
        return Output(
            summary,
            metadata={
                "target": MetadataValue.text(summary["target"]),
                "offloaded": len(summary["offloaded"]),
                "bytes": MetadataValue.int(summary["bytes"]),
                "dry_run": summary["dry_run"],
            },
        )

    @job(name=name, description="Offload a bucket's cold objects to its S3 archive.")
    def offload_job() -> None:
        offload_op()

    return offload_job
