"""Meta records as untrusted input, round two (issue 28): what a record claims about where it
lives, what it restates and how it was cut is checked against what the server says.

Each test publishes records with nats-py directly (tests/raw.py), as a writer of the bucket
with nothing but publish rights would, and reproduces the defect as it was found.
"""

from __future__ import annotations

import json
import logging

import fsspec
import pytest

import natsobj
from natsobj.model import ObjectInfo
from natsobj.names import meta_subject


def publish_record(raw, bucket: str, name: str, record: dict | bytes, headers=None) -> int:
    data = record if isinstance(record, bytes) else json.dumps(record).encode()
    return raw.publish(meta_subject(bucket, name), data, {"Nats-Rollup": "sub", **(headers or {})})


def stored_record(raw, bucket: str, name: str) -> dict:
    return json.loads(raw.last_msg(meta_subject(bucket, name), bucket).data)


def warnings_naming(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


# -- a record's bucket field ----------------------------------------------------------------


@pytest.fixture
def other_store(sync_client, bucket_name: str):
    created = sync_client.create_store(bucket_name + "b")
    yield created
    sync_client.delete_store(created.bucket)


def test_a_record_naming_another_bucket_is_refused_and_never_followed(
    store, other_store, raw, nats_url, tmp_path, caplog
):
    """A writer of bucket A republishes a record saying ``"bucket": "B"``: A's listings,
    downloads and recursive deletes must neither show nor touch B's object."""
    a, b = store.bucket, other_store.bucket
    secret = other_store.put("payroll.csv", b"salaries")
    store.put("mine.txt", b"A's own")
    forged = {**stored_record(raw, b, "payroll.csv"), "bucket": b}
    publish_record(raw, a, "payroll.csv", forged)

    with pytest.raises(natsobj.BadObjectMeta, match=r"'payroll.csv'.*field 'bucket'") as caught:
        store.get_info("payroll.csv")
    assert a in str(caught.value)
    with pytest.raises(natsobj.BadObjectMeta, match="field 'bucket'"):
        ObjectInfo.from_json(forged, bucket=a)
    assert ObjectInfo.from_json(forged, bucket=b).bucket == b  # where it belongs, it is fine

    with caplog.at_level(logging.WARNING, logger="natsobj"):
        assert [(i.bucket, i.name) for i in store.list()] == [(a, "mine.txt")]
    assert len(warnings_naming(caplog, "'payroll.csv'")) == 1, caplog.text

    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    assert fs.find(a) == [f"{a}/mine.txt"]
    fs.get(f"{a}/", str(tmp_path), recursive=True)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["mine.txt"]
    fs.rm(a, recursive=True)
    assert other_store.get_bytes("payroll.csv") == b"salaries"
    assert other_store.get_info("payroll.csv").sequence == secret.sequence
    with pytest.raises((natsobj.ObjectNotFound, natsobj.BucketNotFound)):
        store.get_info("mine.txt")  # what A held went, bucket and all
