"""Expiry from Airflow, run by ``airflow dags test`` against the real server: the put
operator's templated ``ttl``, and the common-io XCom backend's objects under a lifecycle rule."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

from natsobj.errors import BucketNotFound
from natsobj.lifecycle import LifecycleRule
from tests.airflow.test_object_storage import XCOM_DAG

TTL_DAG = """
from datetime import timedelta

from airflow.sdk import DAG

from airflow_natsobj.operators.object_store import NatsCreateObjectOperator

with DAG("DAG_ID", schedule=None, params={{"keep": "2h"}}) as dag:
    NatsCreateObjectOperator(
        task_id="templated", bucket="{bucket}", name="tmp/a.txt", data="a",
        ttl="{{{{ params.keep }}}}",
    )
    NatsCreateObjectOperator(
        task_id="seconds", bucket="{bucket}", name="tmp/b.txt", data="b", ttl=600
    )
    NatsCreateObjectOperator(
        task_id="timedelta", bucket="{bucket}", name="tmp/c.txt", data="c",
        ttl=timedelta(minutes=5),
    )
    NatsCreateObjectOperator(task_id="kept", bucket="{bucket}", name="keep/d.txt", data="d")
    NatsCreateObjectOperator(
        task_id="bad", bucket="{bucket}", name="tmp/e.txt", data="e", ttl="a fortnight"
    )
"""


def _left(expires: datetime | None) -> timedelta:
    assert expires is not None
    return expires - datetime.now(UTC)


def test_put_operator_ttl_sets_the_objects_expiry(run_dag, store):
    run = run_dag(TTL_DAG.format(bucket=store.bucket))
    states = run.states
    assert states["bad"] == "failed", run.output[-4000:]
    assert "a fortnight" in run.output  # the parse error names the value
    assert {k: v for k, v in states.items() if k != "bad"} == dict.fromkeys(
        ("templated", "seconds", "timedelta", "kept"), "success"
    ), run.output[-4000:]
    for name, ttl in [
        ("tmp/a.txt", timedelta(hours=2)),
        ("tmp/b.txt", timedelta(seconds=600)),
        ("tmp/c.txt", timedelta(minutes=5)),
    ]:
        left = _left(store.get_info(name).expires)
        assert ttl - timedelta(seconds=60) < left <= ttl, (name, left)
    assert store.get_info("keep/d.txt").expires is None
    assert "tmp/e.txt" not in {i.name for i in store.list()}
    # the ObjectInfo dict says when it expires (by this client's clock, as its mtime)
    returned = datetime.fromisoformat(run.xcom("seconds")["expires"])
    assert abs(returned - store.get_info("tmp/b.txt").expires) < timedelta(seconds=2)
    assert run.xcom("kept")["expires"] is None


def test_xcom_backend_objects_expire_under_the_buckets_rule(run_dag, sync_client, bucket_name):
    """The docs/airflow.md recipe: a rule ``xcom/** -> 2d`` on the XCom bucket; every XCom the
    backend writes through the nats:// filesystem then carries its expiry."""
    store = sync_client.create_store(bucket_name)
    store.set_lifecycle_rules([LifecycleRule("xcom/**", timedelta(days=2))])
    env = {
        "AIRFLOW__CORE__XCOM_BACKEND": "airflow.providers.common.io.xcom.backend."
        "XComObjectStorageBackend",
        "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH": f"nats://nats_default@{bucket_name}/xcom",
        "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD": "1000",
    }
    try:
        run = run_dag(XCOM_DAG, env=env)
        stored = [i for i in store.list() if i.name.startswith("xcom/")]
    finally:
        with contextlib.suppress(BucketNotFound):
            sync_client.delete_store(bucket_name)
    assert run.returncode == 0, run.output[-6000:]
    assert run.xcom("consume") == "ok"
    (info,) = stored
    left = _left(info.expires)
    assert timedelta(days=2) - timedelta(minutes=5) < left <= timedelta(days=2), left


def test_object_storage_path_and_fsspec_writes_take_ttl(nats_default, store):
    from airflow.sdk import ObjectStoragePath

    root = ObjectStoragePath(f"nats://nats_default@{store.bucket}/")
    with (root / "tmp" / "written.bin").open("wb", ttl=timedelta(hours=3)) as handle:
        handle.write(b"x" * 10)
    (root / "keep" / "plain.bin").write_bytes(b"y")
    root.fs.pipe(f"{store.bucket}/tmp/piped.bin", b"z", ttl=600)

    left = _left(store.get_info("tmp/written.bin").expires)
    assert timedelta(hours=3) - timedelta(minutes=1) < left <= timedelta(hours=3), left
    left = _left(store.get_info("tmp/piped.bin").expires)
    assert timedelta(seconds=540) < left <= timedelta(seconds=600), left
    assert store.get_info("keep/plain.bin").expires is None
