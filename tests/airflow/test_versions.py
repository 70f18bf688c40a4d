"""Versions and locks through the Airflow face (docs/versioning.md, docs/airflow.md) on a
versioned bucket of the real server: a DAG run by ``airflow dags test`` reads an overwritten
version by ``version_id``, copies one by ``source_version_id``, deletes (a marker) and
restores; a locked version refuses removal with a typed error naming bucket and object; the
sensor, the triggers and the operators' XComs carry ``version_id`` and ``delete_marker``."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from airflow.providers.amazon.aws.operators.s3 import S3CopyObjectOperator
from airflow_natsobj.operators.copy import NatsCopyObjectOperator
from airflow_natsobj.operators.object_store import (
    NatsDeleteObjectsOperator,
    NatsGetObjectOperator,
)
from airflow_natsobj.operators.versions import NatsRestoreObjectOperator
from airflow_natsobj.sensors.object_store import NatsObjectSensor
from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger, NatsObjectTrigger

from natsobj.errors import ObjectLocked, ObjectNotFound

DAY = timedelta(days=1)

VERSIONS_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.operators.copy import NatsCopyObjectOperator
from airflow_natsobj.operators.object_store import (
    NatsCreateObjectOperator,
    NatsDeleteObjectsOperator,
    NatsGetObjectOperator,
)
from airflow_natsobj.operators.versions import NatsRestoreObjectOperator

B = "{bucket}"
V1 = "{{{{ ti.xcom_pull(task_ids='put_v1')['version_id'] }}}}"

with DAG("DAG_ID", schedule=None) as dag:
    put_v1 = NatsCreateObjectOperator(
        task_id="put_v1", bucket=B, name="report.csv", data="v1", replace=True
    )
    put_v2 = NatsCreateObjectOperator(
        task_id="put_v2", bucket=B, name="report.csv", data="v2", replace=True
    )
    get_v1 = NatsGetObjectOperator(task_id="get_v1", bucket=B, name="report.csv", version_id=V1)
    get_current = NatsGetObjectOperator(task_id="get_current", bucket=B, name="report.csv")
    copy_v1 = NatsCopyObjectOperator(
        task_id="copy_v1",
        source_bucket_key="nats://" + B + "/report.csv",
        dest_bucket_key="nats://" + B + "/copy.csv",
        source_version_id=V1,
    )
    delete = NatsDeleteObjectsOperator(task_id="delete", bucket=B, name="report.csv")
    restore = NatsRestoreObjectOperator(
        task_id="restore", bucket=B, name="report.csv", version_id=V1
    )
    get_restored = NatsGetObjectOperator(task_id="get_restored", bucket=B, name="report.csv")
    remove_locked = NatsDeleteObjectsOperator(
        task_id="remove_locked", bucket=B, name="locked.txt", version_id="{locked}"
    )

    put_v1 >> put_v2 >> [get_v1, get_current, copy_v1] >> delete >> restore >> get_restored
"""


@pytest.fixture
def versioned(store):
    """The test's bucket, keeping versions."""
    store.set_versioning("Enabled")
    return store


def test_a_dag_reads_copies_deletes_and_restores_versions(run_dag, versioned) -> None:
    store = versioned
    locked = store.put("locked.txt", b"audit")
    store.lock("locked.txt", mode="GOVERNANCE", retain_until=datetime.now(UTC) + DAY)
    run = run_dag(VERSIONS_DAG.format(bucket=store.bucket, locked=locked.nuid))
    assert run.states == {
        "put_v1": "success",
        "put_v2": "success",
        "get_v1": "success",
        "get_current": "success",
        "copy_v1": "success",
        "delete": "success",
        "restore": "success",
        "get_restored": "success",
        "remove_locked": "failed",
    }, run.output[-6000:]

    v1, v2 = run.xcom("put_v1"), run.xcom("put_v2")
    assert v1["version_id"] == v1["nuid"] and v2["version_id"] != v1["version_id"]
    assert (run.xcom("get_v1"), run.xcom("get_current")) == ("v1", "v2")

    copied = run.xcom("copy_v1")
    assert store.get_bytes("copy.csv") == b"v1"
    assert copied["version_id"] == store.get_info("copy.csv").nuid

    restored = run.xcom("restore")
    assert restored["restored"] == v1["version_id"]
    assert run.xcom("get_restored") == "v1"
    current = store.get_info("report.csv")
    assert restored["version_id"] == current.nuid != v1["version_id"]
    listed = [
        (v.version_id, v.is_latest, v.delete_marker) for v in store.versions(prefix="report.csv")
    ]
    assert [entry[1:] for entry in listed] == [
        (True, False),  # the restored bytes, current
        (False, True),  # the delete's marker
        (False, False),  # v2
        (False, False),  # v1, still there to restore again
    ]
    assert [listed[2][0], listed[3][0]] == [v2["version_id"], v1["version_id"]]

    assert "ObjectLocked" in run.output
    assert (
        f"bucket '{store.bucket}', object 'locked.txt': version {locked.nuid} cannot be removed"
        in run.output
    )
    assert store.get_bytes("locked.txt", version=locked.nuid) == b"audit"


def test_bypass_governance_removes_a_governance_locked_version_never_a_held_one(
    nats_default, versioned
) -> None:
    store = versioned
    governed = store.put("g.txt", b"1")
    store.lock("g.txt", mode="GOVERNANCE", retain_until=datetime.now(UTC) + DAY)
    held = store.put("h.txt", b"2")
    store.lock("h.txt", legal_hold=True)

    def remove(name: str, version: str, **given: Any) -> Any:
        return NatsDeleteObjectsOperator(
            task_id=f"rm_{name[0]}", bucket=store.bucket, name=name, version_id=version, **given
        ).execute({})

    with pytest.raises(ObjectLocked, match=f"bucket '{store.bucket}', object 'g.txt'"):
        remove("g.txt", governed.nuid)
    assert remove("g.txt", governed.nuid, bypass_governance=True) == ["g.txt"]
    with pytest.raises(ObjectNotFound):
        store.get_info("g.txt", version=governed.nuid)
    with pytest.raises(ObjectLocked, match="legal hold"):
        remove("h.txt", held.nuid, bypass_governance=True)
    assert store.get_bytes("h.txt", version=held.nuid) == b"2"


def test_a_bad_version_id_fails_naming_the_parameter(nats_default, versioned) -> None:
    store = versioned
    store.put("a.txt", b"1")
    copy = NatsCopyObjectOperator(
        task_id="copy",
        source_bucket_key="a.txt",
        dest_bucket_key="b.txt",
        source_bucket_name=store.bucket,
        dest_bucket_name=store.bucket,
        source_version_id="a.txt*",
    )
    with pytest.raises(ValueError, match=r"task 'copy': source_version_id: .*not 'a\.txt\*'"):
        copy.execute({})
    get = NatsGetObjectOperator(task_id="get", bucket=store.bucket, name="a.txt", version_id="x.>")
    with pytest.raises(ValueError, match="task 'get': version_id:"):
        get.execute({})
    restore = NatsRestoreObjectOperator(
        task_id="restore", bucket=store.bucket, name="a.txt", version_id="null"
    )
    with pytest.raises(ValueError, match=f"bucket '{store.bucket}', object 'a.txt': version_id"):
        restore.execute({})
    assert [v.name for v in store.versions()] == ["a.txt"]


def test_a_version_id_needs_one_name() -> None:
    with pytest.raises(ValueError, match="version_id= names a version of one name="):
        NatsDeleteObjectsOperator(task_id="d", bucket="b", name=["a", "b"], version_id="x")
    with pytest.raises(ValueError, match="version_id= names a version of one name="):
        NatsDeleteObjectsOperator(task_id="d", bucket="b", prefix="a/", version_id="x")


def test_a_delete_marker_cannot_be_restored_and_says_so(nats_default, versioned) -> None:
    store = versioned
    store.put("m.txt", b"1")
    marker = store.delete("m.txt")
    restore = NatsRestoreObjectOperator(
        task_id="restore", bucket=store.bucket, name="m.txt", version_id=marker.nuid
    )
    with pytest.raises(ObjectNotFound, match="delete marker"):
        restore.execute({})


# -- what sensors and triggers report ------------------------------------------------------------


def test_the_sensor_reports_the_version_it_found(nats_default, versioned) -> None:
    store = versioned
    store.put("in.csv", b"1")
    second = store.put("in.csv", b"2")
    sensor = NatsObjectSensor(task_id="s", bucket=store.bucket, name="in.csv")
    found = sensor.poke({})
    assert found.xcom_value["version_id"] == second.nuid  # type: ignore[union-attr]
    assert found.xcom_value["delete_marker"] is False  # type: ignore[union-attr]


def _first_events(trigger: Any, count: int) -> list[dict[str, Any]]:
    """The payloads of the trigger's first ``count`` events."""

    async def collect() -> list[dict[str, Any]]:
        events = trigger.run()
        try:
            return [(await anext(events)).payload for _ in range(count)]
        finally:
            await events.aclose()

    return asyncio.run(asyncio.wait_for(collect(), 30))


def test_the_change_trigger_reports_version_ids_and_delete_markers(nats_default, versioned) -> None:
    """From the bucket's earliest change (each name's last record): a put, a versioned
    delete's marker, and a name whose marker was removed (S3's undelete: its version before
    the marker current again), each with the id that reads it back."""
    store = versioned
    put = store.put("a.bin", b"1")
    store.put("b.bin", b"2")
    marker = store.delete("b.bin")
    store.put("c.bin", b"3")
    again = store.put("c.bin", b"4")
    store.delete("c.bin", version=store.delete("c.bin").nuid)
    trigger = NatsObjectChangeTrigger(
        bucket=store.bucket, start_at="earliest", include_deletes=True
    )
    payloads = _first_events(trigger, 3)
    assert [(p["name"], p["version_id"], p["delete_marker"], p["deleted"]) for p in payloads] == [
        ("a.bin", put.nuid, False, False),
        ("b.bin", marker.nuid, True, True),
        ("c.bin", again.nuid, False, False),
    ], payloads

    events = NatsObjectTrigger(bucket=store.bucket, name=["c.bin", "a.bin"]).run()
    payload = asyncio.run(asyncio.wait_for(anext(events), 30)).payload
    assert [o["version_id"] for o in payload["objects"]] == [again.nuid, put.nuid]
    assert [o["delete_marker"] for o in payload["objects"]] == [False, False]


def test_a_plain_delete_is_no_version(nats_default, store) -> None:
    """In a bucket never versioned a delete leaves a plain tombstone: no marker, and no
    version id (none reads it back), where the put before it had one."""
    put = store.put("x.bin", b"1")
    store.delete("x.bin")
    trigger = NatsObjectChangeTrigger(
        bucket=store.bucket, start_at="earliest", include_deletes=True
    )
    (payload,) = _first_events(trigger, 1)
    assert (payload["deleted"], payload["delete_marker"], payload["version_id"]) == (
        True,
        False,
        None,
    )
    assert put.nuid == payload["nuid"]


def test_the_copy_takes_the_amazon_copys_object_and_version_parameters() -> None:
    """A DAG moved from ``S3CopyObjectOperator`` keeps its parameters (the S3 ACL,
    metadata-directive and KMS ones have no NATS counterpart), ``source_version_id`` too."""
    s3_only = {"acl_policy", "meta_data_directive", "kms_key_id", "kms_encryption_type"}
    amazon = set(inspect.signature(S3CopyObjectOperator.__init__).parameters) - s3_only
    ours = set(inspect.signature(NatsCopyObjectOperator.__init__).parameters)
    assert "source_version_id" in amazon
    assert amazon <= ours, amazon - ours
