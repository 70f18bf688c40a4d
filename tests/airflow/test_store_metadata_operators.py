"""The twins of the Amazon provider's bucket tagging operators (get, put, delete a bucket's
metadata) in one ``airflow dags test`` run against the real server, asserted on task states,
XComs and the bucket's metadata afterwards. The keys the server adds, and natsobj's own (the
bucket's lifecycle rules), are never shown and never removed."""

from __future__ import annotations

import subprocess
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from natsobj.lifecycle import LifecycleRule
from tests.airflow.conftest import AIRFLOW_BIN, AIRFLOW_HOME, DAGS_DIR, task_states, xcom

DAG_SOURCE = """
from airflow.sdk import DAG

from airflow_natsobj.operators.store_metadata import (
    NatsDeleteObjectStoreMetadataOperator,
    NatsGetObjectStoreMetadataOperator,
    NatsPutObjectStoreMetadataOperator,
)

B = "{bucket}"

with DAG("DAG_ID", schedule=None) as dag:
    get_before = NatsGetObjectStoreMetadataOperator(task_id="get_before", bucket=B)
    put_pair = NatsPutObjectStoreMetadataOperator(
        task_id="put_pair", bucket=B, key="team", value="{{{{ dag.dag_id }}}}"
    )
    put_both = NatsPutObjectStoreMetadataOperator(
        task_id="put_both",
        bucket=B,
        metadata={{"owner": "ml", "tier": "{{{{ task.task_id }}}}"}},
        key="team",
        value="data",
    )
    get_after = NatsGetObjectStoreMetadataOperator(task_id="get_after", bucket=B)
    delete = NatsDeleteObjectStoreMetadataOperator(task_id="delete", bucket=B)
    get_empty = NatsGetObjectStoreMetadataOperator(task_id="get_empty", bucket=B)
    put_final = NatsPutObjectStoreMetadataOperator(
        task_id="put_final", bucket=B, metadata={{"kept": "yes"}}
    )
    get_missing = NatsGetObjectStoreMetadataOperator(task_id="get_missing", bucket=B + "x")
    put_reserved = NatsPutObjectStoreMetadataOperator(
        task_id="put_reserved", bucket=B, key="natsobj.lifecycle", value="[]"
    )

    get_before >> put_pair >> put_both >> get_after >> delete >> get_empty >> put_final
    put_final >> put_reserved
"""


RULES = [LifecycleRule("reports/**", None), LifecycleRule("tmp/**", timedelta(days=1))]


@dataclass
class Run:
    dag_id: str
    bucket: str
    output: str
    metadata: dict[str, str]  # the bucket's user metadata after the run
    stream_metadata: dict[str, str]  # its stream's, the server's keys included
    rules: list[Any]  # its lifecycle rules after the run

    def xcom(self, task_id: str) -> Any:
        return xcom(self.dag_id, task_id)


@pytest.fixture(scope="module")
def run(nats_default: str) -> Iterator[Run]:
    """One DAG run for every assertion of this module."""
    import natsobj

    bucket = f"t{uuid.uuid4().hex[:12]}"
    with natsobj.connect(nats_default) as client:
        store = client.create_store(bucket, metadata={"owner": "etl", "cost-center": "42"})
        store.set_lifecycle_rules(RULES)
        try:
            dag_id = f"t_{uuid.uuid4().hex[:10]}"
            path = DAGS_DIR / f"{dag_id}.py"
            source = DAG_SOURCE.format(bucket=bucket)
            path.write_text(textwrap.dedent(source).replace("DAG_ID", dag_id))
            try:
                result = subprocess.run(
                    [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(path)],
                    capture_output=True,
                    text=True,
                    timeout=300,
                    cwd=str(AIRFLOW_HOME),
                )
            finally:
                path.unlink(missing_ok=True)
            status = client.store(bucket).status()
            yield Run(
                dag_id,
                bucket,
                result.stdout + result.stderr,
                dict(status.metadata),
                dict(status.stream_info.config.get("metadata") or {}),
                client.store(bucket).lifecycle_rules(),
            )
        finally:
            client.delete_store(bucket)


def test_tasks_end_as_expected(run: Run) -> None:
    states = task_states(run.dag_id)
    failed = {"get_missing", "put_reserved"}
    assert {task for task, state in states.items() if state != "success"} == failed, run.output[
        -6000:
    ]
    assert all(states[task] == "failed" for task in failed)
    assert len(states) == 9
    assert f"bucket {run.bucket + 'x'!r}" in run.output  # BucketNotFound names the bucket
    assert "metadata keys ['natsobj.lifecycle'] start with 'natsobj'" in run.output


def test_get_returns_the_user_metadata_only(run: Run) -> None:
    assert run.xcom("get_before") == {"owner": "etl", "cost-center": "42"}


def test_put_replaces_the_whole_metadata_as_s3_tagging_does(run: Run) -> None:
    assert run.xcom("put_pair") == {"team": run.dag_id}  # owner and cost-center are gone
    assert run.xcom("put_both") == {"owner": "ml", "tier": "put_both", "team": "data"}
    assert run.xcom("get_after") == {"owner": "ml", "tier": "put_both", "team": "data"}


def test_delete_removes_every_user_key(run: Run) -> None:
    assert run.xcom("get_empty") == {}
    assert run.xcom("put_final") == {"kept": "yes"}


def test_the_bucket_afterwards_keeps_the_servers_and_natsobjs_keys(run: Run) -> None:
    assert run.rules == RULES  # natsobj's own key, through every put and delete
    assert run.metadata == {"kept": "yes", "natsobj.lifecycle": run.metadata["natsobj.lifecycle"]}
    server_keys = {k for k in run.stream_metadata if k.startswith("_nats")}
    assert server_keys  # the server's own (its version...), through every put and delete
    assert set(run.stream_metadata) == {"kept", "natsobj.lifecycle", *server_keys}


def test_natsobjs_own_metadata_keys_are_all_under_its_prefix() -> None:
    """What keeps the operators from dropping a key natsobj relies on: every one it writes
    is under ``NATSOBJ_METADATA``."""
    from natsobj.archive.targets import OFFLOAD_METADATA_KEY, TARGET_METADATA_KEY
    from natsobj.lifecycle import LIFECYCLE_METADATA_KEY
    from natsobj.store_config import NATSOBJ_METADATA

    for key in (LIFECYCLE_METADATA_KEY, TARGET_METADATA_KEY, OFFLOAD_METADATA_KEY):
        assert key.startswith(NATSOBJ_METADATA)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key": "team"}, "key and value come together"),
        ({"value": "data"}, "key and value come together"),
        ({}, "give metadata="),
    ],
)
def test_put_without_a_pair_or_metadata_fails_when_parsed(kwargs, message) -> None:
    from airflow_natsobj.operators.store_metadata import NatsPutObjectStoreMetadataOperator

    with pytest.raises(ValueError, match=message):
        NatsPutObjectStoreMetadataOperator(task_id="put", bucket="b", **kwargs)
