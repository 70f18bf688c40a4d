"""Nightly S3 backup of a natsobj bucket with Dagster: one catch-up pass per run.

    AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \\
        dagster job execute -m example_dags.dagster_archive -j nats_archive

Restore with ``natsobj archive restore s3://my-backups/nats/demo --to demo-restored``.
"""

import os

from dagster import Definitions, RunConfig, ScheduleDefinition

from dagster_natsobj import NatsObjectStoreResource
from dagster_natsobj.archive import NatsArchiveConfig, make_nats_archive_job

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
TARGET = os.environ.get("NATSOBJ_ARCHIVE_TARGET", "s3://my-backups/nats/demo")

nats_archive = make_nats_archive_job("nats_archive")

defs = Definitions(
    jobs=[nats_archive],
    schedules=[
        ScheduleDefinition(
            job=nats_archive,
            cron_schedule="0 2 * * *",
            run_config=RunConfig(
                ops={"nats_archive_pass": NatsArchiveConfig(bucket=BUCKET, target=TARGET)}
            ),
        )
    ],
    resources={"nats": NatsObjectStoreResource(url=os.environ.get("NATS_URL", "embedded"))},
)
