"""A bucket's versioning as a store setting (``create_store``/``ensure_store``/``update_store``
with ``versioning=``) and ``ObjectStore.restore``, the restore S3 users do by copying a
version over its key."""

from __future__ import annotations

import pytest

import natsobj
from natsobj.versioning import Versioning


def test_a_bucket_created_versioned_keeps_its_first_overwrite(sync_client, bucket_name) -> None:
    store = sync_client.create_store(bucket_name, versioning="Enabled", description="kept")
    try:
        assert store.versioning() is Versioning.ENABLED
        first = store.put("model.pkl", b"first weights")
        store.put("model.pkl", b"second weights")
        assert store.get_bytes("model.pkl", version=first.nuid) == b"first weights"
        # asked again with the same settings it binds; with other versioning it is refused
        assert sync_client.create_store(bucket_name, versioning="Enabled", description="kept")
        assert sync_client.ensure_store(bucket_name, versioning="Enabled").bucket == bucket_name
        store.set_versioning("Suspended")
        with pytest.raises(natsobj.BucketExists):
            sync_client.create_store(bucket_name, versioning="Enabled", description="kept")
    finally:
        sync_client.delete_store(bucket_name)


def test_a_new_bucket_cannot_be_created_suspended(sync_client, bucket_name) -> None:
    with pytest.raises(ValueError, match="Suspended is for a bucket that has kept them"):
        sync_client.create_store(bucket_name, versioning="Suspended")
    with pytest.raises(natsobj.BucketNotFound):
        sync_client.store(bucket_name)


def test_update_store_sets_versioning_beside_the_other_settings(sync_client, bucket_name) -> None:
    sync_client.create_store(bucket_name)
    try:
        store = sync_client.update_store(bucket_name, versioning="Enabled")
        assert store.versioning() is Versioning.ENABLED
        store = sync_client.update_store(bucket_name, versioning="Suspended", description="reports")
        assert store.versioning() is Versioning.SUSPENDED
        assert store.status().description == "reports"
        with pytest.raises(ValueError, match=r"one of 'Enabled', 'Suspended'"):
            sync_client.update_store(bucket_name, versioning="Unversioned")
        assert store.versioning() is Versioning.SUSPENDED
    finally:
        sync_client.delete_store(bucket_name)


def test_restore_makes_a_version_current_and_keeps_the_one_it_replaces(store) -> None:
    store.set_versioning("Enabled")
    good = store.put("daily.csv", b"a,b\n1,2\n", metadata={"run": "good"})
    bad = store.put("daily.csv", b"garbage")
    restored = store.restore("daily.csv", good.nuid)
    assert store.get_bytes("daily.csv") == b"a,b\n1,2\n"
    assert restored.metadata == {"run": "good"} and restored.nuid not in (good.nuid, bad.nuid)
    ids = [v.version_id for v in store.versions()]
    assert ids == [restored.nuid, bad.nuid, good.nuid]  # the bad run's version is kept too
    marker = store.delete("daily.csv")
    with pytest.raises(natsobj.ObjectNotFound, match="delete marker"):
        store.restore("daily.csv", marker.nuid)
