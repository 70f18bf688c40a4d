"""Operators run by ``airflow dags test`` against the real server: XCom, asset events, lineage,
streaming to ObjectStoragePath, and the failure messages of bad input."""

from __future__ import annotations

import base64
import os

import pytest

HAPPY_DAG = """
from pathlib import Path

from airflow.sdk import DAG, Asset, ObjectStoragePath, task
from airflow_natsobj.lineage import get_hook_lineage_collector

from airflow_natsobj.operators.object_store import (
    NatsCreateObjectStoreOperator,
    NatsDeleteObjectStoreOperator,
    NatsDeleteObjectsOperator,
    NatsGetObjectOperator,
    NatsCreateObjectOperator,
)

BUCKET = "{bucket}"
LOCAL = "{local}"

with DAG("DAG_ID", schedule=None, params={{"greeting": "hello"}}) as dag:
    create = NatsCreateObjectStoreOperator(
        task_id="create", bucket=BUCKET, description="ops test", metadata={{"team": "data"}}
    )
    put_text = NatsCreateObjectOperator(
        task_id="put_text",
        bucket=BUCKET,
        name="text/{{{{ ds }}}}.txt",
        data="{{{{ params.greeting }}}} from {{{{ dag.dag_id }}}}",
        metadata={{"run": "{{{{ run_id }}}}"}},
        outlets=[Asset("nats://{bucket}/text")],
    )
    put_file = NatsCreateObjectOperator(
        task_id="put_file", bucket=BUCKET, name="files/local.bin", source=LOCAL + "/in.bin"
    )
    put_osp = NatsCreateObjectOperator(
        task_id="put_osp",
        bucket=BUCKET,
        name="files/from_osp.bin",
        source=ObjectStoragePath("file://" + LOCAL + "/in.bin"),
    )
    get_xcom = NatsGetObjectOperator(
        task_id="get_xcom", bucket=BUCKET, name="text/{{{{ ds }}}}.txt",
        min_sequence="{{{{ ti.xcom_pull(task_ids='put_text')['sequence'] }}}}",
    )
    get_b64 = NatsGetObjectOperator(
        task_id="get_b64", bucket=BUCKET, name="files/local.bin", encoding="base64"
    )
    get_local = NatsGetObjectOperator(
        task_id="get_local", bucket=BUCKET, name="files/local.bin",
        destination=LOCAL + "/out/local.bin",
    )
    get_osp = NatsGetObjectOperator(
        task_id="get_osp",
        bucket=BUCKET,
        name="files/from_osp.bin",
        destination=ObjectStoragePath("nats://nats_default@" + BUCKET + "/copies/from_osp.bin"),
    )
    delete = NatsDeleteObjectsOperator(
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

from airflow_natsobj.operators.object_store import NatsGetObjectOperator, NatsCreateObjectOperator

BUCKET = "{bucket}"

with DAG("DAG_ID", schedule=None) as dag:
    NatsGetObjectOperator(task_id="unknown_bucket", bucket=BUCKET + "_nope", name="x")
    NatsGetObjectOperator(task_id="unknown_object", bucket=BUCKET, name="nope.txt")
    NatsGetObjectOperator(task_id="missing_conn", bucket=BUCKET, name="x", nats_conn_id="no_such")
    NatsCreateObjectOperator(task_id="bad_template", bucket=BUCKET,
                             name="{{{{ undefined_thing }}}}", data="x")
    NatsCreateObjectOperator(task_id="bad_name", bucket=BUCKET, name="{{{{ '' }}}}", data="x")
    NatsCreateObjectOperator(task_id="no_file", bucket=BUCKET, name="y", source="/no/such/file.csv")
    NatsGetObjectOperator(task_id="too_big", bucket=BUCKET, name="big.bin", max_xcom_bytes=1000)
    NatsGetObjectOperator(task_id="not_text", bucket=BUCKET, name="big.bin")
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
    from airflow_natsobj.operators.object_store import NatsCreateObjectOperator

    with pytest.raises(ValueError, match="exactly one of source="):
        NatsCreateObjectOperator(task_id="p", bucket="b", name="n")
    with pytest.raises(ValueError, match="exactly one of source="):
        NatsCreateObjectOperator(task_id="p", bucket="b", name="n", data="x", source="/tmp/x")


@pytest.mark.parametrize("rendered", [None, "None", " None ", "", " "])
def test_a_sequence_template_that_rendered_nothing_is_unset_on_every_task(rendered) -> None:
    """Jinja renders a None as "None" (and a template may leave blanks around it): the
    sensor read " None " as a number and failed where the get operator read it as unset."""
    from airflow_natsobj.operators.object_store import NatsGetObjectOperator
    from airflow_natsobj.sensors.object_store import NatsObjectSensor

    get = NatsGetObjectOperator(task_id="g", bucket="b", name="n", min_sequence=rendered)
    sensor = NatsObjectSensor(task_id="s", bucket="b", name="n", after_sequence=rendered)
    assert get._known_sequence() is None
    assert sensor._after() is None
    for task, parameter in ((get, "min_sequence"), (sensor, "after_sequence")):
        setattr(task, parameter, "12x")
        with pytest.raises(ValueError, match=f"{parameter} must be a stream sequence number"):
            task._known_sequence() if task is get else task._after()


REPLACE_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.operators.object_store import NatsCreateObjectOperator

B = "{bucket}"

with DAG("DAG_ID", schedule=None) as dag:
    first = NatsCreateObjectOperator(task_id="first", bucket=B, name="m.bin", data="one")
    refused = NatsCreateObjectOperator(task_id="refused", bucket=B, name="m.bin", data="two")
    replaced = NatsCreateObjectOperator(
        task_id="replaced", bucket=B, name="m.bin", data="three", replace=True,
        trigger_rule="all_done",
    )
    after_delete = NatsCreateObjectOperator(
        task_id="after_delete", bucket=B, name="gone.bin", data="again"
    )
    first >> refused >> replaced
"""


def test_create_object_refuses_to_overwrite_unless_replace(run_dag, store, bucket_name) -> None:
    store.put("gone.bin", b"old")
    store.delete("gone.bin")  # a tombstone is no object: writing the name again is allowed
    run = run_dag(REPLACE_DAG.format(bucket=bucket_name))
    assert run.states == {
        "first": "success",
        "refused": "failed",
        "replaced": "success",
        "after_delete": "success",
    }, run.output[-5000:]
    assert f"bucket '{bucket_name}', object 'm.bin': object already exists" in run.output
    assert "Pass replace=True to overwrite it" in run.output
    assert store.get_bytes("m.bin") == b"three"
    assert store.get_bytes("gone.bin") == b"again"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("NatsObjectPutOperator", "NatsCreateObjectOperator"),
        ("NatsObjectGetOperator", "NatsGetObjectOperator"),
        ("NatsObjectDeleteOperator", "NatsDeleteObjectsOperator"),
    ],
)
def test_old_operator_names_are_deprecated_aliases(old: str, new: str) -> None:
    from airflow.exceptions import AirflowProviderDeprecationWarning
    from airflow_natsobj.operators import object_store

    kwargs = {"task_id": "t", "bucket": "b", "name": "n"}
    if old == "NatsObjectPutOperator":
        kwargs["data"] = "x"
    with pytest.warns(AirflowProviderDeprecationWarning, match=f"{old} is deprecated.*use {new}"):
        operator = getattr(object_store, old)(**kwargs)
    assert isinstance(operator, getattr(object_store, new))
    if old == "NatsObjectPutOperator":
        assert operator.replace is True  # the old name keeps its old default: overwrite


def test_openlineage_facets_name_the_objects(nats_default: str) -> None:
    from airflow_natsobj.operators.object_store import (
        NatsCreateObjectOperator,
        NatsDeleteObjectsOperator,
        NatsGetObjectOperator,
    )

    put = NatsCreateObjectOperator(task_id="p", bucket="lake", name="raw/a.csv", data="x")
    get = NatsGetObjectOperator(task_id="g", bucket="lake", name="raw/a.csv")
    delete = NatsDeleteObjectsOperator(task_id="d", bucket="lake", name=["a", "b"])
    start, done = (
        put.get_openlineage_facets_on_start(),
        put.get_openlineage_facets_on_complete(None),
    )
    for lineage in (start, done):
        assert lineage.inputs == []
        assert [(d.namespace, d.name) for d in lineage.outputs] == [("nats://lake", "raw/a.csv")]
    read = get.get_openlineage_facets_on_start()
    assert [(d.namespace, d.name) for d in read.inputs] == [("nats://lake", "raw/a.csv")]
    assert [d.name for d in delete.get_openlineage_facets_on_complete(None).outputs] == ["a", "b"]


def test_an_operators_lineage_and_its_assets_name_one_dataset(nats_default: str) -> None:
    """OpenLineage joins lineage on (namespace, name): the dataset an operator reports and
    the one its object's asset converts to must be the same, or the graph splits in two."""
    from airflow.sdk import Asset
    from airflow_natsobj.assets import convert_asset_to_openlineage
    from airflow_natsobj.operators.object_store import (
        NatsCreateObjectOperator,
        NatsGetObjectOperator,
    )

    for name in ("raw/a.csv", "top.bin"):
        asset = Asset(f"nats://lake/{name}")
        converted = convert_asset_to_openlineage(asset, None)
        put = NatsCreateObjectOperator(task_id="p", bucket="lake", name=name, data="x")
        get = NatsGetObjectOperator(task_id="g", bucket="lake", name=name)
        (written,) = put.get_openlineage_facets_on_complete(None).outputs
        (read,) = get.get_openlineage_facets_on_start().inputs
        for dataset in (written, read):
            assert (dataset.namespace, dataset.name) == (converted.namespace, converted.name)


OPENLINEAGE_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.operators.object_store import NatsCreateObjectOperator, NatsGetObjectOperator

with DAG("DAG_ID", schedule=None) as dag:
    put = NatsCreateObjectOperator(task_id="put", bucket="{bucket}", name="ol/a.txt", data="x")
    get = NatsGetObjectOperator(task_id="get", bucket="{bucket}", name="ol/a.txt")
    put >> get
"""


def test_openlineage_provider_emits_the_datasets(run_dag, store, bucket_name, tmp_path) -> None:
    import json

    events = tmp_path / "openlineage.jsonl"
    transport = {"type": "file", "log_file_path": str(events), "append": True}
    env = {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__DISABLED": "False",
    }
    run = run_dag(OPENLINEAGE_DAG.format(bucket=bucket_name), env=env)
    assert run.states == {"put": "success", "get": "success"}, run.output[-4000:]
    assert events.exists(), run.output[-4000:]
    emitted = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    complete = {
        e["job"]["name"].rsplit(".", 1)[-1]: e for e in emitted if e["eventType"] == "COMPLETE"
    }
    identity = {"namespace": f"nats://{bucket_name}", "name": "ol/a.txt"}
    for dataset in (*complete["put"]["outputs"], *complete["get"]["inputs"]):
        assert {k: dataset[k] for k in identity} == identity
