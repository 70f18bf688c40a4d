"""Operators run by ``airflow dags test`` against the real server: XCom, asset events, lineage,
streaming to ObjectStoragePath, and the failure messages of bad input."""

from __future__ import annotations

import base64
import os

import pytest

HAPPY_DAG = """
from pathlib import Path

from airflow.sdk import DAG, Asset, ObjectStoragePath, task
from airflow.sdk.lineage import get_hook_lineage_collector

from airflow_natsobj.operators.object_store import (
    NatsCreateObjectStoreOperator,
    NatsDeleteObjectStoreOperator,
    NatsObjectDeleteOperator,
    NatsObjectGetOperator,
    NatsObjectPutOperator,
)

BUCKET = "{bucket}"
LOCAL = "{local}"

with DAG("DAG_ID", schedule=None, params={{"greeting": "hello"}}) as dag:
    create = NatsCreateObjectStoreOperator(
        task_id="create", bucket=BUCKET, description="ops test", metadata={{"team": "data"}}
    )
    put_text = NatsObjectPutOperator(
        task_id="put_text",
        bucket=BUCKET,
        name="text/{{{{ ds }}}}.txt",
        data="{{{{ params.greeting }}}} from {{{{ dag.dag_id }}}}",
        metadata={{"run": "{{{{ run_id }}}}"}},
        outlets=[Asset("nats://{bucket}/text")],
    )
    put_file = NatsObjectPutOperator(
        task_id="put_file", bucket=BUCKET, name="files/local.bin", source=LOCAL + "/in.bin"
    )
    put_osp = NatsObjectPutOperator(
        task_id="put_osp",
        bucket=BUCKET,
        name="files/from_osp.bin",
        source=ObjectStoragePath("file://" + LOCAL + "/in.bin"),
    )
    get_xcom = NatsObjectGetOperator(
        task_id="get_xcom", bucket=BUCKET, name="text/{{{{ ds }}}}.txt",
        min_sequence="{{{{ ti.xcom_pull(task_ids='put_text')['sequence'] }}}}",
    )
    get_b64 = NatsObjectGetOperator(
        task_id="get_b64", bucket=BUCKET, name="files/local.bin", encoding="base64"
    )
    get_local = NatsObjectGetOperator(
        task_id="get_local", bucket=BUCKET, name="files/local.bin",
        destination=LOCAL + "/out/local.bin",
    )
    get_osp = NatsObjectGetOperator(
        task_id="get_osp",
        bucket=BUCKET,
        name="files/from_osp.bin",
        destination=ObjectStoragePath("nats://nats_default@" + BUCKET + "/copies/from_osp.bin"),
    )
    delete = NatsObjectDeleteOperator(
        task_id="delete", bucket=BUCKET, name=["files/local.bin", "missing"], missing_ok=True
    )

    @task
    def lineage():
        collected = get_hook_lineage_collector().collected_assets
        return {{
            "inputs": sorted({{a.asset.uri for a in collected.inputs}}),
            "outputs": sorted({{a.asset.uri for a in collected.outputs}}),
        }}

    scratch = NatsCreateObjectStoreOperator(task_id="scratch", bucket=BUCKET + "_scratch")
    drop = NatsDeleteObjectStoreOperator(task_id="drop", bucket=BUCKET + "_scratch")

    create >> [put_text, put_file, put_osp]
    put_text >> get_xcom
    put_file >> [get_b64, get_local]
    put_osp >> get_osp
    [get_b64, get_local] >> delete
    [get_xcom, get_osp, delete] >> lineage() >> scratch >> drop
"""


def test_operators_put_get_delete_with_xcom_assets_and_lineage(
    run_dag, sync_client, bucket_name: str, tmp_path
) -> None:
    payload = os.urandom(300_000)
    (tmp_path / "in.bin").write_bytes(payload)
    try:
        run = run_dag(HAPPY_DAG.format(bucket=bucket_name, local=tmp_path))
        assert run.returncode == 0, run.output[-6000:]
        assert set(run.states.values()) == {"success"}

        put = run.xcom("put_text")
        assert put["bucket"] == bucket_name and put["name"].startswith("text/")
        assert put["size"] == len(f"hello from {run.dag_id}") and put["sequence"] > 0
        assert put["metadata"]["run"].startswith("manual__")
        assert run.xcom("get_xcom") == f"hello from {run.dag_id}"
        assert base64.b64decode(run.xcom("get_b64")) == payload
        assert (tmp_path / "out" / "local.bin").read_bytes() == payload
        assert run.xcom("get_local")["digest"] == run.xcom("put_file")["digest"]
        assert run.xcom("delete") == ["files/local.bin"]
        assert run.xcom("create")["metadata"] == {"team": "data"}

        (event,) = [e for e in _asset_events(bucket_name) if e.get("name") == put["name"]]
        assert {k: event[k] for k in ("name", "nuid", "digest", "size")} == {
            k: put[k] for k in ("name", "nuid", "digest", "size")
        }

        store = sync_client.store(bucket_name)
        assert store.get_bytes("copies/from_osp.bin") == payload
        assert {i.name for i in store.list()} == {
            put["name"],
            "files/from_osp.bin",
            "copies/from_osp.bin",
        }
        assert bucket_name + "_scratch" not in sync_client.store_names()

        lineage = run.xcom("lineage")
        assert f"nats://{bucket_name}/files/local.bin" in lineage["inputs"]
        assert f"nats://{bucket_name}/files/from_osp.bin" in lineage["inputs"]
        assert f"nats://{bucket_name}/{put['name']}" in lineage["outputs"]
        assert f"nats://{bucket_name}/files/local.bin" in lineage["outputs"]
    finally:
        sync_client.delete_store(bucket_name)


def _asset_events(bucket: str) -> list[dict]:
    from .conftest import asset_event_extras

    return asset_event_extras(f"nats://{bucket}/text")


FAILING_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.operators.object_store import NatsObjectGetOperator, NatsObjectPutOperator

BUCKET = "{bucket}"

with DAG("DAG_ID", schedule=None) as dag:
    NatsObjectGetOperator(task_id="unknown_bucket", bucket=BUCKET + "_nope", name="x")
    NatsObjectGetOperator(task_id="unknown_object", bucket=BUCKET, name="nope.txt")
    NatsObjectGetOperator(task_id="missing_conn", bucket=BUCKET, name="x", nats_conn_id="no_such")
    NatsObjectPutOperator(task_id="bad_template", bucket=BUCKET, name="{{{{ undefined_thing }}}}",
                          data="x")
    NatsObjectPutOperator(task_id="bad_name", bucket=BUCKET, name="{{{{ '' }}}}", data="x")
    NatsObjectPutOperator(task_id="no_file", bucket=BUCKET, name="y", source="/no/such/file.csv")
    NatsObjectGetOperator(task_id="too_big", bucket=BUCKET, name="big.bin", max_xcom_bytes=1000)
    NatsObjectGetOperator(task_id="not_text", bucket=BUCKET, name="big.bin")
"""


def test_bad_input_fails_each_task_with_a_clear_message(run_dag, store, bucket_name) -> None:
    store.put("big.bin", b"\xff" * 5000)
    run = run_dag(FAILING_DAG.format(bucket=bucket_name))
    assert run.returncode != 0
    assert set(run.states.values()) == {"failed"}, run.states
    expected = [
        f"bucket '{bucket_name}_nope': bucket does not exist",
        f"bucket '{bucket_name}', object 'nope.txt': object does not exist",
        "The conn_id `no_such` isn't defined",
        "'undefined_thing' is undefined",
        "object name is empty",
        "source '/no/such/file.csv' is not a file; nothing was put",
        "object is 5000 bytes, over the 1000 byte cap; give destination=",
        f"bucket '{bucket_name}', object 'big.bin' is not utf-8 text",
    ]
    missing = [message for message in expected if message not in run.output]
    assert not missing, run.output[-8000:]
    assert [i.name for i in store.list()] == ["big.bin"]


def test_put_needs_exactly_one_source() -> None:
    from airflow_natsobj.operators.object_store import NatsObjectPutOperator

    with pytest.raises(ValueError, match="exactly one of source="):
        NatsObjectPutOperator(task_id="p", bucket="b", name="n")
    with pytest.raises(ValueError, match="exactly one of source="):
        NatsObjectPutOperator(task_id="p", bucket="b", name="n", data="x", source="/tmp/x")
