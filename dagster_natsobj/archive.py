"""Dagster jobs for scheduled backups (one catch-up pass of a bucket's S3 archive) and for
tiering (one offload pass).

The S3 endpoint and credentials come from the AWS environment of the run worker
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``), or from the op config's
``endpoint``/``region``. The run's output metadata shows the cursor and totals, never keys.

``give_up_after`` and the offload policy's ``older_than``, ``larger_than`` and ``expiry_margin``
are rows of ``natsobj.operation_options``: text fields taking the table's durations and sizes
("5m", "30d", "100MB"; a number is seconds or bytes), unset meaning the table's default.
"""

from typing import Any  # no "from __future__ import annotations": Dagster reads the config type

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, Output, job, op

from dagster_natsobj.options import config_field, option, resolved, table_validator
from dagster_natsobj.resource import NatsObjectStoreResource
from natsobj.deprecation import warn_deprecated


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
    give_up_after: str | None = config_field("archive", "give_up_after")

    _check_options = table_validator("archive")

    def give_up_seconds(self) -> float:
        """How long the pass retries a target that does not answer, in seconds."""
        seconds: float = resolved("archive", self)["give_up_after"].total_seconds()
        return seconds


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
            resource.settings(),
            config.bucket,
            config.targets(),
            give_up_after=config.give_up_seconds(),
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
    older_than: str | None = config_field("offload", "older_than")  # from the version's mtime
    larger_than: str | None = config_field("offload", "larger_than")
    glob: str | None = None  # path-aware, as natsobj.matching
    names: list[str] | None = None
    expiry_margin: str | None = config_field("offload", "expiry_margin")
    dry_run: bool = False
    # Deprecated for one release: older_than and expiry_margin ("30d", "12h") replace them.
    older_than_days: float | None = None
    expiry_margin_hours: float | None = None

    _check_options = table_validator("offload")

    def policy(self) -> Any:
        """The ``natsobj.archive.tiering.OffloadPolicy`` these fields name."""
        from natsobj.archive.tiering import OffloadPolicy

        given: dict[str, object] = {
            name: getattr(self, name) for name in ("older_than", "larger_than", "expiry_margin")
        }
        for old, new, unit in (
            ("older_than_days", "older_than", "d"),
            ("expiry_margin_hours", "expiry_margin", "h"),
        ):
            value = getattr(self, old)
            if value is None:
                continue
            warn_deprecated(f"NatsOffloadConfig.{old}", f'{new} (a duration, like "3{unit}")')
            if given[new] is not None:
                raise ValueError(f"NatsOffloadConfig: give {new} or {old}, not both")
            given[new] = option("offload", new).parse(f"{value}{unit}")
        return OffloadPolicy(
            **resolved("offload", given, where="NatsOffloadConfig"),
            glob=self.glob,
            names=frozenset(self.names) if self.names is not None else None,
        )


def make_nats_offload_job(
    name: str = "nats_offload", *, resource_key: str = "nats"
) -> JobDefinition:
    """A job with one op offloading the cold objects of ``config.bucket`` to its archive
    (docs/archive.md, "Tiering"); assets stored there keep loading through the IO manager."""

    @op(name=f"{name}_pass", required_resource_keys={resource_key})
    def offload_op(context: OpExecutionContext, config: NatsOffloadConfig) -> Output[dict]:
        from natsobj.archive.scheduled import offload_pass

        resource: NatsObjectStoreResource = getattr(context.resources, resource_key)
        summary: dict[str, Any] = offload_pass(
            resource.settings(),
            config.bucket,
            config.targets(),
            config.policy(),
            dry_run=config.dry_run,
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
