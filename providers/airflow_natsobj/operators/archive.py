"""Scheduled backups: one catch-up pass of the S3 archive of a bucket per task run.

S3 credentials come from an ``aws`` connection when ``aws_conn_id`` is given (needs
apache-airflow-providers-amazon), otherwise from the standard AWS chain of the worker
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``). Keys never reach the logs
or XCom: the task returns the archive's cursor and totals only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.options import operation_options
from airflow_natsobj.wording import airflow_words
from natsobj.errors import in_words_of

if TYPE_CHECKING:
    from airflow.sdk import Context

    from natsobj.archive import ArchiveTargets, S3Options


def s3_options_from_aws_connection(aws_conn_id: str) -> S3Options:
    """Endpoint, region and keys of an Airflow ``aws`` connection."""
    from natsobj.archive import S3Options

    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise ValueError(
            f"aws_conn_id={aws_conn_id!r} needs the Amazon provider: "
            "pip install apache-airflow-providers-amazon (or leave aws_conn_id unset to use "
            "the worker's AWS environment)"
        ) from exc
    hook = AwsBaseHook(aws_conn_id=aws_conn_id, client_type="s3")
    credentials = hook.get_credentials()
    return S3Options(
        endpoint=hook.conn_config.endpoint_url,
        region=hook.conn_region_name,
        access_key_id=credentials.access_key,
        secret_access_key=credentials.secret_key,
        session_token=credentials.token,
    )


def archive_target(
    target: str | Sequence[str],
    strategy: str | None,
    aws_conn_id: str | None,
    endpoint: str | None,
    region: str | None,
) -> ArchiveTargets:
    """The target(s) (``s3://b/p`` or a list of ``s3://b/p[=WEIGHT]`` with a strategy), with
    S3 settings from the ``aws`` connection or the worker's environment."""
    from natsobj.archive import ArchiveTargets, S3Options

    options = s3_options_from_aws_connection(aws_conn_id) if aws_conn_id else S3Options()
    options.endpoint = endpoint or options.endpoint
    options.region = region or options.region
    return ArchiveTargets.parse(target, strategy, options)


class NatsArchiveOperator(BaseOperator):
    """Archive every new version of ``bucket`` to ``target`` (``s3://bucket/prefix``, or a
    list of them with a ``strategy``: ``replicate``, ``failover`` or ``shard``; see
    docs/archive.md, "Several targets").

    Returns ``{"bucket", "target", "cursor", "versions", "bytes", "skipped", ...}``; versions
    whose bytes were gone from NATS before they could be archived are listed in ``skipped``
    by sequence and logged as warnings. ``give_up_after`` (a duration: ``"5m"``, seconds or a
    timedelta; None: the default, ``docs/options.md``) is how long the pass waits for a
    target that does not answer before the task fails."""

    template_fields: Sequence[str] = ("bucket", "target")
    ui_color = "#f0e6d7"

    def __init__(
        self,
        *,
        bucket: str,
        target: str | Sequence[str],
        strategy: str | None = None,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        aws_conn_id: str | None = None,
        endpoint: str | None = None,
        region: str | None = None,
        small_object: int | None = None,
        give_up_after: str | float | timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.target = target
        self.strategy = strategy
        self.nats_conn_id = nats_conn_id
        self.aws_conn_id = aws_conn_id
        self.endpoint = endpoint
        self.region = region
        self.small_object = small_object
        options = operation_options(
            "archive", f"task {self.task_id!r}", give_up_after=give_up_after
        )
        self.give_up_after: timedelta = options["give_up_after"]

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        from natsobj.archive.scheduled import archive_pass

        target = archive_target(
            self.target, self.strategy, self.aws_conn_id, self.endpoint, self.region
        )
        extra = {"small_object": self.small_object} if self.small_object else {}
        summary = archive_pass(
            NatsObjectStoreHook(nats_conn_id=self.nats_conn_id).settings,
            self.bucket,
            target,
            give_up_after=self.give_up_after.total_seconds(),
            **extra,
        )
        for sequence in summary["skipped"]:
            self.log.warning("sequence %s was gone from NATS before it could be archived", sequence)
        self.log.info(
            "archived %s through sequence %s: %s versions, %s bytes",
            self.bucket,
            summary["cursor"],
            summary["versions"],
            summary["bytes"],
        )
        return summary


class NatsOffloadOperator(BaseOperator):
    """Offload the cold objects of ``bucket`` to its archive at ``target`` (one URL, or the
    list and ``strategy`` the archive was written with): their chunks leave
    JetStream, their meta records stay, and reads go through to S3 (docs/archive.md,
    "Tiering"). Only versions the archive holds are offloaded, so schedule it after
    ``NatsArchiveOperator``. Every condition given must hold: ``older_than`` (from the
    version's mtime: a duration such as ``"30d"``, seconds or a timedelta), ``larger_than``
    (a size: ``"100MB"`` or bytes), a path-aware ``glob``, explicit ``names``. An object whose
    TTL runs out within ``expiry_margin`` (a duration; None: the default,
    ``docs/options.md``) is never offloaded.

    Returns ``{"bucket", "target", "dry_run", "offloaded": [names], "bytes", "skipped"}``."""

    template_fields: Sequence[str] = ("bucket", "target", "glob")
    ui_color = "#dfe8f0"

    def __init__(
        self,
        *,
        bucket: str,
        target: str | Sequence[str],
        strategy: str | None = None,
        older_than: str | float | timedelta | None = None,
        larger_than: str | int | None = None,
        glob: str | None = None,
        names: Sequence[str] | None = None,
        expiry_margin: str | float | timedelta | None = None,
        dry_run: bool = False,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        aws_conn_id: str | None = None,
        endpoint: str | None = None,
        region: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.target = target
        self.strategy = strategy
        options = operation_options(
            "offload",
            f"task {self.task_id!r}",
            older_than=older_than,
            larger_than=larger_than,
            expiry_margin=expiry_margin,
        )
        self.older_than: timedelta | None = options["older_than"]
        self.larger_than: int | None = options["larger_than"]
        self.glob = glob
        self.names = list(names) if names is not None else None
        self.expiry_margin: timedelta = options["expiry_margin"]
        self.dry_run = dry_run
        self.nats_conn_id = nats_conn_id
        self.aws_conn_id = aws_conn_id
        self.endpoint = endpoint
        self.region = region

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        from natsobj.archive.scheduled import offload_pass
        from natsobj.archive.tiering import OffloadPolicy

        policy = OffloadPolicy(
            older_than=self.older_than,
            larger_than=self.larger_than,
            glob=self.glob,
            names=frozenset(self.names) if self.names is not None else None,
            expiry_margin=self.expiry_margin,
        )
        summary = offload_pass(
            NatsObjectStoreHook(nats_conn_id=self.nats_conn_id).settings,
            self.bucket,
            archive_target(
                self.target, self.strategy, self.aws_conn_id, self.endpoint, self.region
            ),
            policy,
            dry_run=self.dry_run,
        )
        for skipped in summary["skipped"]:
            self.log.info("not offloaded: %s (%s)", skipped["name"], skipped["reason"])
        self.log.info(
            "%s %s objects (%s bytes) of %s",
            "would offload" if self.dry_run else "offloaded",
            len(summary["offloaded"]),
            summary["bytes"],
            self.bucket,
        )
        return summary
