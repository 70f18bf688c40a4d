"""``NatsGetObjectOperator`` into an ObjectStoragePath that already holds the user's file: a
failed get (no such object, digest mismatch) leaves that file exactly as it was, and a good one
replaces it without leaving a partial copy beside it (issue 21, point 12). That is the rule
every face writes a fetched file by (``natsobj.local.files.replacing``; the core's ``get_file``
and the CLI's ranged get are held to it in tests/security/test_local_files.py and
tests/cli/test_ranges_cli.py): a ``file://`` destination also keeps its mode, and one on another
filesystem (here ``nats://``) gets no part left beside it either."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.raw import FORGED_DIGEST, rewrite_record

GET_DAG = """
from airflow.sdk import DAG, ObjectStoragePath

from airflow_natsobj.operators.object_store import NatsGetObjectOperator

BUCKET = "{bucket}"
LOCAL = "{local}"
REMOTE = "nats://nats_default@" + BUCKET + "/kept/"

with DAG("DAG_ID", schedule=None) as dag:
    for task_id, name in [("missing", "no/such"), ("forged", "forged"), ("good", "good")]:
        NatsGetObjectOperator(
            task_id=task_id,
            bucket=BUCKET,
            name=name + ".bin",
            destination=ObjectStoragePath("file://" + LOCAL + "/" + task_id + ".bin"),
        )
        NatsGetObjectOperator(
            task_id=task_id + "_remote",
            bucket=BUCKET,
            name=name + ".bin",
            destination=ObjectStoragePath(REMOTE + task_id + ".bin"),
        )
"""

PRECIOUS = b"the user's own file, which no failed task may touch\n"
TASKS = ("missing", "forged", "good")


def test_a_failed_get_leaves_the_existing_destination_untouched(
    run_dag, store, bucket_name, raw, tmp_path: Path
) -> None:
    store.put("forged.bin", b"x" * 300_000)  # several chunks: the copy is partly written
    rewrite_record(raw, bucket_name, "forged.bin", digest=FORGED_DIGEST)
    store.put("good.bin", b"fresh content")
    for task_id in TASKS:
        (tmp_path / f"{task_id}.bin").write_bytes(PRECIOUS)
        (tmp_path / f"{task_id}.bin").chmod(0o640)
        store.put(f"kept/{task_id}.bin", PRECIOUS)

    run = run_dag(GET_DAG.format(bucket=bucket_name, local=tmp_path))

    failed = {"missing": "failed", "forged": "failed", "good": "success"}
    assert run.states == {**failed, **{f"{k}_remote": v for k, v in failed.items()}}, run.output[
        -5000:
    ]
    assert f"bucket '{bucket_name}', object 'no/such.bin': object does not exist" in run.output
    assert f"bucket '{bucket_name}', object 'forged.bin': SHA-256 of the data" in run.output
    assert (tmp_path / "missing.bin").read_bytes() == PRECIOUS
    assert (tmp_path / "forged.bin").read_bytes() == PRECIOUS
    assert (tmp_path / "good.bin").read_bytes() == b"fresh content"
    assert stat.S_IMODE((tmp_path / "good.bin").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forged.bin", "good.bin", "missing.bin"]

    assert store.get_bytes("kept/missing.bin") == PRECIOUS
    assert store.get_bytes("kept/forged.bin") == PRECIOUS
    assert store.get_bytes("kept/good.bin") == b"fresh content"
    assert sorted(i.name for i in store.list(prefix="kept/")) == [
        "kept/forged.bin",
        "kept/good.bin",
        "kept/missing.bin",
    ]
