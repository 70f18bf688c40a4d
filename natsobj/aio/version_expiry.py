"""Removing the kept versions a bucket's lifecycle rules expire (S3's NoncurrentVersionExpiration
and ExpiredObjectDeleteMarker): ``natsobj store lifecycle BUCKET --apply``.

A kept version's chunks were written while it was current, before anyone knew when it would
be replaced, so no server TTL can expire them: a sweep removes them. A version is noncurrent
from the write that replaced it, which is the next newer version's time (its ``mtime``, or the
name's current record's when no listed version is newer: an ADR-20 client's delete).

Every removal goes through ``ObjectStore.delete(name, version=)``, the one removal of a version:
a version whose lock holds is never removed by a rule (nothing bypasses governance here), and
the removal is the same event in the change feed as a caller's. Each is checked again just
before: a version made current again meanwhile, or a marker that has versions under it again,
is left alone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import TYPE_CHECKING

from natsobj.aio import records, versions
from natsobj.errors import NatsObjError, ObjectLocked, ObjectNotFound, costs_only_its_object
from natsobj.lifecycle import LifecycleRule, version_rule
from natsobj.model import ObjectInfo
from natsobj.versioning import ObjectVersion, utcnow

if TYPE_CHECKING:
    from natsobj.aio.store import ObjectStore


@dataclass
class VersionRemoval:
    """One version a rule expires: ``why`` (its age, its rank, or an expired delete marker);
    ``done`` once removed, ``skipped`` (why) when it is locked or changed meanwhile, ``failed``
    (the error) when it could not be removed."""

    version: ObjectVersion
    rule: LifecycleRule
    why: str
    done: bool = False
    skipped: str = ""
    failed: str = ""

    @property
    def expired_marker(self) -> bool:
        return self.version.is_latest


async def plan(store: ObjectStore, *, now: datetime | None = None) -> list[VersionRemoval]:
    """The versions the bucket's rules expire at ``now`` (this client's clock by default), by
    name and newest first."""
    rules = await store.lifecycle_rules()
    if not any(rule.governs_versions for rule in rules):
        return []
    now = now or utcnow()
    due: list[VersionRemoval] = []
    for name, group in groupby(await store.versions(), key=lambda version: version.name):
        rule = version_rule(rules, name)
        if rule is not None and not rule.problem:
            due.extend(await _expired(store, rule, list(group), now))
    return due


async def noncurrent(
    store: ObjectStore, listed: list[ObjectVersion]
) -> list[tuple[ObjectVersion, datetime | None]]:
    """One name's noncurrent versions (``listed`` is all its versions, newest first), each with
    when it became noncurrent: the next newer version's time, or the name's current record's
    (None when that cannot be read)."""
    newer_time = listed[0].mtime if listed[0].is_latest else await _current_time(store, listed)
    found = []
    for version in listed:
        if not version.is_latest:
            found.append((version, newer_time))
        newer_time = version.mtime
    return found


async def _expired(
    store: ObjectStore, rule: LifecycleRule, listed: list[ObjectVersion], now: datetime
) -> list[VersionRemoval]:
    """Of one name's versions (newest first), those ``rule`` expires."""
    due = []
    newer = 0  # noncurrent versions above this one, lost ones aside (they keep no bytes)
    for version, since in await noncurrent(store, listed):
        if rule.expires_noncurrent(newer, since, now):
            due.append(VersionRemoval(version, rule, _age(rule, newer, since, now)))
        newer += 0 if version.lost else 1
    current = listed[0]
    if (
        rule.expired_delete_markers
        and current.is_latest
        and current.delete_marker
        and len(due) == len(listed) - 1
    ):
        due.append(VersionRemoval(current, rule, "a delete marker with no version under it"))
    return due


async def _current_time(store: ObjectStore, listed: list[ObjectVersion]) -> datetime | None:
    """When the name's record that is no version (a plain tombstone) replaced its newest kept
    version; None when it cannot be read (no version is then removed by age)."""
    try:
        return (await store.get_info(listed[0].name, include_deleted=True)).mtime
    except NatsObjError as exc:
        if not costs_only_its_object(exc):
            raise
        return None


def _age(rule: LifecycleRule, newer: int, since: datetime | None, now: datetime) -> str:
    days = f"noncurrent for {(now - since).days} days" if rule.noncurrent_days and since else ""
    rank = f"{newer} newer noncurrent versions" if rule.newer_noncurrent is not None else ""
    return ", ".join(part for part in (days, rank) if part)


async def apply(store: ObjectStore, removals: list[VersionRemoval]) -> list[VersionRemoval]:
    """Remove each planned version (see the module's docstring); returns them, marked. One
    version that fails is marked and the rest are removed: only a lost server or bucket ends
    the run. Noncurrent versions go before the delete markers above them."""
    for removal in sorted(removals, key=lambda r: r.expired_marker):
        info = removal.version.info
        try:
            why = await _changed(store, removal)
            if why:
                removal.skipped = why
                continue
            await store.delete(info.name, version=info.nuid)
            removal.done = True
        except ObjectLocked as exc:
            removal.skipped = f"locked: {exc.message}"
        except ObjectNotFound as exc:
            removal.skipped = f"removed meanwhile ({exc.message})"
        except NatsObjError as exc:
            if not costs_only_its_object(exc):
                raise
            removal.failed = str(exc)
    return removals


async def _changed(store: ObjectStore, removal: VersionRemoval) -> str:
    """Why the version is no longer one the rule expires (empty when it still is)."""
    info = removal.version.info
    current = await records.current(store.bucket_stream, info.name)
    is_current = _is(current, info)
    if not removal.expired_marker:
        return "it is the current version again" if is_current else ""
    if not is_current:
        return "it is no longer the current version"
    kept = await versions.kept_records(store.bucket_stream, name=info.name)
    if any(version.nuid != info.nuid for version in kept):
        return "versions under it are still kept (a removal was skipped, or a put came)"
    return ""


def _is(current: ObjectInfo | None, info: ObjectInfo) -> bool:
    return current is not None and current.nuid == info.nuid and versions.keepable(current)


__all__ = ["VersionRemoval", "apply", "noncurrent", "plan"]
