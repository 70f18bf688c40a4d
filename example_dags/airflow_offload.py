"""Nightly tiering: archive a bucket, then offload what has gone cold to S3.

The archive pass copies every new version to ``$NATSOBJ_ARCHIVE_TARGET``; the offload pass
then purges from JetStream the chunks of objects not written for
``$NATSOBJ_OFFLOAD_AFTER_DAYS`` days (30 by default) and over 1 MiB. Their names and metadata
stay in NATS, and every natsobj read goes through to S3. Bring one back with::

    natsobj archive rehydrate demo reports/2026-01.parquet

S3 credentials: the worker's AWS environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), or
set ``aws_conn_id`` to an Airflow ``aws`` connection (apache-airflow-providers-amazon).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import dag
from airflow_natsobj.operators.archive import NatsArchiveOperator, NatsOffloadOperator

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
TARGET = os.environ.get("NATSOBJ_ARCHIVE_TARGET", "s3://my-backups/nats/demo")
AFTER_DAYS = float(os.environ.get("NATSOBJ_OFFLOAD_AFTER_DAYS", "30"))


@dag(schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False, tags=["natsobj"])
def airflow_offload() -> None:
    archive = NatsArchiveOperator(task_id="archive", bucket=BUCKET, target=TARGET)
    offload = NatsOffloadOperator(
        task_id="offload",
        bucket=BUCKET,
        target=TARGET,
        older_than=timedelta(days=AFTER_DAYS),
        larger_than=1024 * 1024,
    )
    archive >> offload


airflow_offload()
