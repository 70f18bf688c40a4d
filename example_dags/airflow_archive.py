"""Nightly backup of a bucket to S3: one catch-up pass of the archive per run.

Every version written since the last run (puts, metadata updates, deletes) is copied to
``s3://$NATSOBJ_ARCHIVE_TARGET``; small objects go into packs, and the Parquet index under
``index/`` lets any Parquet reader query the bucket's history. Restore with::

    natsobj archive restore s3://my-backups/nats/demo --to demo-restored [--at 2026-01-31T00:00]

S3 credentials: the worker's AWS environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), or
set ``aws_conn_id`` to an Airflow ``aws`` connection (apache-airflow-providers-amazon).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import dag
from airflow_natsobj.operators.archive import NatsArchiveOperator

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
TARGET = os.environ.get("NATSOBJ_ARCHIVE_TARGET", "s3://my-backups/nats/demo")


@dag(schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False, tags=["natsobj"])
def airflow_archive() -> None:
    NatsArchiveOperator(task_id="archive", bucket=BUCKET, target=TARGET)


airflow_archive()
