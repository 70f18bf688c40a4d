"""Lifecycle rules for the versions a versioned bucket keeps (``natsobj.aio.version_expiry``):
S3's NoncurrentDays, NewerNoncurrentVersions and ExpiredObjectDeleteMarker, swept with an
injected clock (a rule counts days; no test waits them), through the one removal of a version
that honours locks."""

from __future__ import annotations

from datetime import timedelta

import pytest

import natsobj
from natsobj.aio import version_expiry
from natsobj.lifecycle import LifecycleRule, decode_rules, encode_rules, resolve_ttl
from natsobj.names import chunk_subject
from natsobj.sync import run
from natsobj.versioning import utcnow


def _versioned(store, *rules: LifecycleRule) -> None:
    store.set_versioning("Enabled")
    store.set_lifecycle_rules(list(rules))


def _plan(store, now) -> list[version_expiry.VersionRemoval]:
    return run(version_expiry.plan(store.aio, now=now))


def _sweep(store, now) -> list[version_expiry.VersionRemoval]:
    return run(version_expiry.apply(store.aio, _plan(store, now)))


def _ids(store, name: str) -> list[str]:
    return [v.version_id for v in store.versions(prefix=name)]


def test_a_version_expires_days_after_the_write_that_replaced_it(store, raw) -> None:
    """Counted from when a version became noncurrent (the next version's time), not from
    when it was written: at the instant ``one`` has been noncurrent for 30 days, ``two``,
    written then, has been noncurrent for less."""
    _versioned(store, LifecycleRule("logs/**", noncurrent_days=30))
    one, two, three = (store.put("logs/a", body) for body in (b"1", b"22", b"333"))
    store.put("other", b"x")
    store.put("other", b"y")  # no rule governs its versions
    assert two.mtime is not None and three.mtime is not None and two.mtime < three.mtime
    assert _plan(store, utcnow() + timedelta(days=29)) == []

    due = _plan(store, two.mtime + timedelta(days=30))
    assert [r.version.version_id for r in due] == [one.nuid]
    assert "noncurrent for 30 days" in due[0].why
    done = run(version_expiry.apply(store.aio, due))
    assert [r.done for r in done] == [True]
    assert _ids(store, "logs/a") == [three.nuid, two.nuid]
    assert raw.subject_count(store.bucket, chunk_subject(store.bucket, one.nuid)) == 0
    assert store.get_bytes("logs/a", version=two.nuid) == b"22"

    swept = _sweep(store, utcnow() + timedelta(days=31))
    assert [r.version.version_id for r in swept if r.done] == [two.nuid]
    assert _ids(store, "logs/a") == [three.nuid]
    assert store.get_bytes("logs/a") == b"333"  # the current version is never a rule's
    assert len(store.versions(prefix="other")) == 2


def test_newer_noncurrent_versions_are_kept_whatever_their_age(store) -> None:
    _versioned(store, LifecycleRule("**", noncurrent_days=7, newer_noncurrent=2))
    ids = [store.put("m", bytes([n]) * (n + 1)).nuid for n in range(5)]  # 4 noncurrent
    assert _plan(store, utcnow() + timedelta(days=6)) == []
    swept = _sweep(store, utcnow() + timedelta(days=8))
    assert [(r.version.version_id, r.done) for r in swept] == [(ids[1], True), (ids[0], True)]
    assert _ids(store, "m") == ids[:1:-1]  # the current one and the two newest noncurrent

    store.set_lifecycle_rules([LifecycleRule("**", newer_noncurrent=1)])  # alone: no age
    assert [r.version.version_id for r in _sweep(store, utcnow())] == [ids[2]]
    assert _ids(store, "m") == [ids[4], ids[3]]


def test_a_locked_version_is_never_removed_by_a_rule(store) -> None:
    _versioned(store, LifecycleRule("**", noncurrent_days=1, expired_delete_markers=True))
    held = store.put("audit", b"held")
    retained = store.put("audit", b"retained")
    free = store.put("audit", b"free")
    store.delete("audit")  # a marker over three versions
    store.lock("audit", version=held.nuid, legal_hold=True)
    until = utcnow() + timedelta(days=60)
    store.lock("audit", version=retained.nuid, mode="GOVERNANCE", retain_until=until)

    swept = {r.version.version_id: r for r in _sweep(store, utcnow() + timedelta(days=2))}
    assert swept[free.nuid].done
    assert "legal hold" in swept[held.nuid].skipped
    assert "governance" in swept[retained.nuid].skipped
    # the marker was planned (every version under it was due) but versions are still there
    marker = store.versions(prefix="audit")[0]
    assert marker.delete_marker and marker.is_latest
    assert not swept[marker.version_id].done and "still kept" in swept[marker.version_id].skipped
    assert _ids(store, "audit") == [marker.version_id, retained.nuid, held.nuid]


def test_an_expired_delete_marker_is_removed_and_the_name_is_gone(store) -> None:
    _versioned(store, LifecycleRule("tmp/**", noncurrent_days=1, expired_delete_markers=True))
    old = store.put("tmp/a", b"a")
    store.delete("tmp/a")
    store.delete("tmp/never-written")  # S3 leaves a marker for it too: expired at once
    store.put("kept", b"k")
    store.delete("kept")  # no rule on it: its marker stays

    first = _sweep(store, utcnow())
    assert [(r.version.name, r.done) for r in first] == [("tmp/never-written", True)]
    assert _ids(store, "tmp/a") != []

    swept = _sweep(store, utcnow() + timedelta(days=2))
    assert [(r.version.info.nuid == old.nuid, r.expired_marker, r.done) for r in swept] == [
        (True, False, True),
        (False, True, True),
    ]
    assert store.versions(prefix="tmp/") == []
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("tmp/a")
    assert [v.delete_marker for v in store.versions(prefix="kept")] == [True, False]

    store.put("tmp/b", b"b")  # a marker whose rule does not remove markers stays
    store.delete("tmp/b")
    store.set_lifecycle_rules([LifecycleRule("tmp/**", noncurrent_days=1)])
    swept = _sweep(store, utcnow() + timedelta(days=2))
    assert [r.expired_marker for r in swept] == [False]
    assert [v.delete_marker for v in store.versions(prefix="tmp/b")] == [True]


def test_a_version_made_current_again_meanwhile_is_left_alone(store) -> None:
    _versioned(store, LifecycleRule("**", newer_noncurrent=1))
    one, two, three = (store.put("r", body) for body in (b"1", b"2", b"3"))
    planned = _plan(store, utcnow())
    assert [r.version.version_id for r in planned] == [one.nuid]
    store.delete("r", version=three.nuid)
    store.delete("r", version=two.nuid)  # `one` is current again
    swept = run(version_expiry.apply(store.aio, planned))
    assert swept[0].skipped == "it is the current version again"
    assert store.get_bytes("r") == b"1"


def test_version_rules_sit_beside_ttl_rules_and_old_rule_texts_still_decode() -> None:
    old = '[{"pattern":"tmp/**","ttl":604800.0},{"pattern":"reports/**","ttl":null}]'
    assert decode_rules({"natsobj.lifecycle": old}) == [
        LifecycleRule("tmp/**", timedelta(days=7)),
        LifecycleRule("reports/**", None),
    ]
    rules = [
        LifecycleRule.parse("tmp/**=noncurrent:30d,newer-noncurrent:3,expired-markers"),
        LifecycleRule.parse("**=2d,noncurrent:1"),
    ]
    assert [str(rule) for rule in rules] == [
        "tmp/**=noncurrent:30d,newer-noncurrent:3,expired-markers",
        "**=2d,noncurrent:1d",
    ]
    assert decode_rules({"natsobj.lifecycle": encode_rules(rules)}) == rules
    # a rule on versions only says nothing about a put's TTL: the next rule gives it
    assert resolve_ttl(None, rules, "tmp/x") == timedelta(days=2)
    assert rules[0].to_json() == {
        "pattern": "tmp/**",
        "noncurrent_days": 30,
        "newer_noncurrent_versions": 3,
        "expired_delete_markers": True,
    }
    for text in ("x=never,noncurrent:3", "x=noncurrent:3h", "x=newer-noncurrent:0"):
        with pytest.raises(natsobj.BadLifecycleRule):
            LifecycleRule.parse(text)
    bad = '[{"pattern":"a/**","noncurrent_days":true},{"pattern":"b/**","ttl":60}]'
    unusable, usable = decode_rules({"natsobj.lifecycle": bad})
    assert "noncurrent_days" in unusable.problem and usable.ttl == timedelta(minutes=1)
