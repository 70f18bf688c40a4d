"""``NatsGetObjectOperator`` and the hook refuse a record without a digest unless
``allow_missing_digest=True`` (issue 21, point 9). In-process: the operator's own code path."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from natsobj.errors import MissingDigest
from tests.security.test_missing_digest_faces import CONTENT, refusal, strip_digest


def test_get_operator_refuses_a_record_without_digest_unless_allowed(
    nats_default, store, bucket_name, raw, tmp_path: Path
) -> None:
    from airflow.sdk import ObjectStoragePath
    from airflow_natsobj.operators.object_store import NatsGetObjectOperator

    store.put("plain", CONTENT)
    strip_digest(raw, bucket_name, "plain")
    destinations = {
        "xcom": None,
        "file": tmp_path / "file.bin",
        "storage": ObjectStoragePath(f"file://{tmp_path}/storage.bin"),
    }
    for what, destination in destinations.items():
        common = {"bucket": bucket_name, "name": "plain", "destination": destination}
        strict = NatsGetObjectOperator(task_id=f"strict_{what}", encoding="base64", **common)
        with pytest.raises(MissingDigest, match=refusal(bucket_name, "plain")) as refused:
            strict.execute(context={})
        # the hint in Airflow's words: the operator's parameter (issue 29)
        assert "allow_missing_digest=True on NatsGetObjectOperator" in str(refused.value)
        lenient = NatsGetObjectOperator(
            task_id=f"lenient_{what}", encoding="base64", allow_missing_digest=True, **common
        )
        result = lenient.execute(context={})
        if destination is None:
            assert base64.b64decode(result) == CONTENT
        else:
            assert result["size"] == len(CONTENT)
    assert (tmp_path / "file.bin").read_bytes() == CONTENT
    assert (tmp_path / "storage.bin").read_bytes() == CONTENT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.bin", "storage.bin"]
