"""Locks on versions (``natsobj.versioning.VersionLock``, ADR-20's "Locking", S3 Object Lock):
a retained or held version cannot be removed nor its record changed; compliance retention is
never shortened or lifted, governance only by a caller bypassing it; a bucket's default
retention locks every new version; an unreadable lock record holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import natsobj
from natsobj.names import lock_subject
from natsobj.versioning import DefaultRetention, LockMode, VersionLock


def _versioned(store) -> None:
    store.set_versioning("Enabled")


def _soon(days: int = 1) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def test_a_compliance_retention_keeps_the_version_from_everyone(store) -> None:
    _versioned(store)
    kept = store.put("audit.log", b"entries")
    until = _soon()
    lock = store.lock("audit.log", mode="COMPLIANCE", retain_until=until)
    assert lock == VersionLock(LockMode.COMPLIANCE, until)
    store.put("audit.log", b"newer")  # a put keeps the locked version; it is not overwritten
    for bypass in (False, True):
        with pytest.raises(natsobj.ObjectLocked, match="compliance mode"):
            store.delete("audit.log", version=kept.nuid, bypass_governance=bypass)
    with pytest.raises(natsobj.ObjectLocked, match="cannot be shortened"):
        store.lock(
            "audit.log",
            version=kept.nuid,
            mode="COMPLIANCE",
            retain_until=until - timedelta(hours=1),
            bypass_governance=True,
        )
    with pytest.raises(natsobj.ObjectLocked):
        store.lock("audit.log", version=kept.nuid, mode="GOVERNANCE", retain_until=_soon(9))
    longer = store.lock("audit.log", version=kept.nuid, mode="COMPLIANCE", retain_until=_soon(3))
    assert store.lock_info("audit.log", version=kept.nuid) == longer
    with store.get("audit.log", version=kept.nuid) as reader:
        assert reader.read() == b"entries"


def test_a_governance_retention_gives_way_only_to_a_bypass(store) -> None:
    _versioned(store)
    kept = store.put("model.bin", b"weights")
    store.lock("model.bin", mode=LockMode.GOVERNANCE, retain_until=_soon())
    with pytest.raises(natsobj.ObjectLocked, match="governance mode"):
        store.delete("model.bin", version=kept.nuid)
    with pytest.raises(natsobj.ObjectLocked, match="bypass_governance"):
        store.lock("model.bin", clear_retention=True)
    assert store.lock("model.bin", clear_retention=True, bypass_governance=True) == VersionLock()
    store.lock("model.bin", mode="GOVERNANCE", retain_until=_soon())
    store.delete("model.bin", version=kept.nuid, bypass_governance=True)
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("model.bin", version=kept.nuid)


def test_a_legal_hold_holds_until_lifted_whatever_the_bypass(store) -> None:
    _versioned(store)
    kept = store.put("case.pdf", b"evidence")
    store.lock("case.pdf", legal_hold=True)
    with pytest.raises(natsobj.ObjectLocked, match="legal hold"):
        store.delete("case.pdf", version=kept.nuid, bypass_governance=True)
    with pytest.raises(natsobj.ObjectLocked, match="cannot be changed in place"):
        store.update_meta("case.pdf", metadata={"tampered": "yes"})
    store.delete("case.pdf")  # a delete marker: allowed, the version stays
    assert store.lock_info("case.pdf", version=kept.nuid).legal_hold
    store.lock("case.pdf", version=kept.nuid, legal_hold=False)
    store.delete("case.pdf", version=kept.nuid)
    assert [v.delete_marker for v in store.versions()] == [True]


def test_the_default_retention_locks_every_new_version(store) -> None:
    _versioned(store)
    store.set_default_retention(DefaultRetention(LockMode.GOVERNANCE, days=2))
    assert store.default_retention() == DefaultRetention(LockMode.GOVERNANCE, 2)
    first = store.put("daily.csv", b"1")
    lock = store.lock_info("daily.csv", version=first.nuid)
    assert lock.mode is LockMode.GOVERNANCE and lock.retain_until is not None
    assert timedelta(days=1, hours=23) < lock.retain_until - datetime.now(UTC) <= timedelta(days=2)
    with pytest.raises(natsobj.ObjectLocked):
        store.delete("daily.csv", version=first.nuid)
    store.set_default_retention(None)
    second = store.put("daily.csv", b"2")
    assert store.lock_info("daily.csv", version=second.nuid) == VersionLock()


def test_locks_need_a_versioned_bucket(store) -> None:
    store.put("plain", b"x")
    with pytest.raises(natsobj.NatsObjError, match="versioned bucket"):
        store.lock("plain", legal_hold=True)
    with pytest.raises(ValueError, match="needs versioning enabled"):
        store.set_default_retention(DefaultRetention(LockMode.COMPLIANCE, days=1))


def test_an_unreadable_lock_record_holds_the_version(store, raw) -> None:
    """A writer of the bucket who plants garbage on a version's lock subject cannot get the
    version removed by it: unreadable is locked, until a bypassing caller sets a lock."""
    _versioned(store)
    kept = store.put("x", b"bytes")
    raw.publish(lock_subject(store.bucket, "x", kept.nuid), b"not json")
    with pytest.raises(natsobj.ObjectLocked):
        store.delete("x", version=kept.nuid, bypass_governance=True)
    with pytest.raises(natsobj.ObjectLocked, match="unreadable"):
        store.lock("x", legal_hold=False)
    store.lock("x", legal_hold=False, bypass_governance=True)
    store.delete("x", version=kept.nuid)


def test_lock_rules_are_judged_in_utc_time() -> None:
    now = datetime.now(UTC)
    past = VersionLock(LockMode.COMPLIANCE, now - timedelta(seconds=1))
    assert not past.holds(now)
    assert past.removal_refused(now, bypass_governance=False) is None
    assert past.change_refused(VersionLock(), now, bypass_governance=False) is None
    with pytest.raises(ValueError, match="aware"):
        VersionLock().with_changes(mode="GOVERNANCE", retain_until=datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="both a mode"):
        VersionLock().with_changes(mode="GOVERNANCE")


def test_object_lock_keeps_versioning_enabled_for_good(store) -> None:
    assert not store.object_lock()
    store.enable_object_lock()
    assert store.object_lock() and store.versioning() is natsobj.Versioning.ENABLED
    with pytest.raises(ValueError, match=r"cannot be\s+suspended"):
        store.set_versioning("Suspended")
