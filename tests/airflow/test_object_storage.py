"""``ObjectStoragePath("nats://nats_default@bucket/...")`` reads, writes, lists and deletes; and
common-io's object-storage XCom backend puts large XComs into NATS."""

from __future__ import annotations

import contextlib

import pandas as pd
from airflow.sdk import ObjectStoragePath

from natsobj.errors import BucketNotFound


def test_object_storage_path_reads_writes_lists_and_deletes(nats_default, store, bucket_name):
    root = ObjectStoragePath(f"nats://nats_default@{bucket_name}/")
    data = root / "dir" / "file.parquet"
    frame = pd.DataFrame({"station": ["a", "b"], "mm": [1.5, 0.0]})
    with data.open("wb") as handle:
        frame.to_parquet(handle)
    with data.open("rb") as handle:
        pd.testing.assert_frame_equal(pd.read_parquet(handle), frame)

    (root / "dir" / "notes.txt").write_text("hello")
    (root / "dir" / "sub" / "deep.txt").write_bytes(b"deep")
    assert data.exists() and data.is_file() and (root / "dir").is_dir()
    assert data.stat().st_size == store.get_info("dir/file.parquet").size
    assert sorted(p.name for p in (root / "dir").iterdir()) == ["file.parquet", "notes.txt", "sub"]
    assert sorted(str(p) for p in (root / "dir").glob("*.txt")) == [
        f"nats://nats_default@{bucket_name}/dir/notes.txt"
    ]
    assert (root / "dir" / "notes.txt").read_text() == "hello"
    # Airflow 3.2+ names it as an attribute; 3.1 keeps it in the storage options
    conn_id = getattr(data, "conn_id", None) or data.storage_options["conn_id"]
    assert conn_id == "nats_default"

    (root / "dir" / "notes.txt").unlink()
    assert not (root / "dir" / "notes.txt").exists()
    copy = root / "copy" / "file.parquet"
    data.copy(copy)
    assert store.get_bytes("copy/file.parquet") == store.get_bytes("dir/file.parquet")
    assert sorted(i.name for i in store.list()) == [
        "copy/file.parquet",
        "dir/file.parquet",
        "dir/sub/deep.txt",
    ]


def test_a_path_is_parsed_as_the_filesystem_parses_it_before_any_io() -> None:
    """Airflow 3.1's ObjectStoragePath took a generic parser for nats:// (its first letter cut
    off every name, a "/" before the bucket) until the provider registered the filesystem's."""
    from airflow_natsobj.fs.path_flavour import _NatsFlavourSource

    from natsobj.fs import NatsObjectFileSystem

    path = ObjectStoragePath("nats://nats_default@bkt/dir/file.parquet")
    assert (path.name, path.parts) == ("file.parquet", ("bkt/", "dir", "file.parquet"))
    assert str(path.parent) == "nats://nats_default@bkt/dir"
    assert str(path.parent.parent.parent) == "nats://nats_default@bkt/"
    assert (_NatsFlavourSource.root_marker, _NatsFlavourSource.sep) == (
        NatsObjectFileSystem.root_marker,
        NatsObjectFileSystem.sep,
    )


XCOM_DAG = """
from airflow.sdk import DAG, task

with DAG("DAG_ID", schedule=None) as dag:

    @task
    def produce():
        return {"rows": [{"id": i, "text": "x" * 40} for i in range(200)]}

    @task
    def small():
        return 7

    @task
    def consume(table, number):
        assert len(table["rows"]) == 200 and table["rows"][199]["id"] == 199
        assert number == 7
        return "ok"

    consume(produce(), small())
"""


def test_common_io_xcom_backend_keeps_large_xcoms_in_nats(run_dag, sync_client, bucket_name):
    """The bucket does not exist yet: the backend's mkdir creates it."""
    env = {
        "AIRFLOW__CORE__XCOM_BACKEND": "airflow.providers.common.io.xcom.backend."
        "XComObjectStorageBackend",
        "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH": f"nats://nats_default@{bucket_name}/xcom",
        "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD": "1000",
    }
    try:
        run = run_dag(XCOM_DAG, env=env)
        store = sync_client.store(bucket_name)
        stored_objects = store.list()
    finally:
        with contextlib.suppress(BucketNotFound):
            sync_client.delete_store(bucket_name)
    assert run.returncode == 0, run.output[-6000:]
    assert run.xcom("consume") == "ok"
    assert run.xcom("small") == 7  # under the threshold: stays in the database
    reference = run.xcom("produce")
    assert reference.startswith(f"nats://nats_default@{bucket_name}/xcom/"), reference
    (stored,) = [i for i in stored_objects if i.name.startswith("xcom/")]
    assert reference.endswith(stored.name)
    assert stored.size > 8000
