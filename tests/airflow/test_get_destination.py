"""``NatsGetObjectOperator`` into an ObjectStoragePath that already holds the user's file: a
failed get (no such object, digest mismatch) leaves that file exactly as it was, and a good one
replaces it without leaving a partial copy beside it (issue 21, point 12)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

GET_DAG = """
from airflow.sdk import DAG, ObjectStoragePath

from airflow_natsobj.operators.object_store import NatsGetObjectOperator

BUCKET = "{bucket}"
LOCAL = "{local}"

with DAG("DAG_ID", schedule=None) as dag:
    for task_id, name in [("missing", "no/such"), ("forged", "forged"), ("good", "good")]:
        NatsGetObjectOperator(
            task_id=task_id,
            bucket=BUCKET,
            name=name + ".bin",
            destination=ObjectStoragePath("file://" + LOCAL + "/" + task_id + ".bin"),
        )
"""

PRECIOUS = b"the user's own file, which no failed task may touch\n"


def _forge_digest(raw, bucket: str, name: str) -> None:
    """Republish the object's meta record with another digest, as any bucket writer can."""
    subject = f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"
    record = json.loads(raw.last_msg(subject, bucket).data)
    record["digest"] = "SHA-256=" + base64.urlsafe_b64encode(b"\0" * 32).decode()
    raw.publish(subject, json.dumps(record).encode(), {"Nats-Rollup": "sub"})


def test_a_failed_get_leaves_the_existing_destination_untouched(
    run_dag, store, bucket_name, raw, tmp_path: Path
) -> None:
    store.put("forged.bin", b"x" * 300_000)  # several chunks: the copy is partly written
    _forge_digest(raw, bucket_name, "forged.bin")
    store.put("good.bin", b"fresh content")
    for task_id in ("missing", "forged", "good"):
        (tmp_path / f"{task_id}.bin").write_bytes(PRECIOUS)

    run = run_dag(GET_DAG.format(bucket=bucket_name, local=tmp_path))

    assert run.states == {"missing": "failed", "forged": "failed", "good": "success"}, run.output[
        -5000:
    ]
    assert f"bucket '{bucket_name}', object 'no/such.bin': object does not exist" in run.output
    assert f"bucket '{bucket_name}', object 'forged.bin': SHA-256 of the data" in run.output
    assert (tmp_path / "missing.bin").read_bytes() == PRECIOUS
    assert (tmp_path / "forged.bin").read_bytes() == PRECIOUS
    assert (tmp_path / "good.bin").read_bytes() == b"fresh content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forged.bin", "good.bin", "missing.bin"]
