"""Bringing objects already in a bucket under its lifecycle rules (``natsobj store lifecycle
BUCKET --apply``).

Rules apply when natsobj puts an object; objects written before a rule existed, or by
another client (which sends no ``Nats-TTL``), never expire by themselves. A restamp puts such
an object again with the same content (streamed from its chunks, verified against its digest
on the way), name, description, headers, metadata and chunk size (when sane), and a TTL of
what is left of the rule's TTL counted from the object's ``mtime`` (as S3 counts from the
creation date); one whose time is up gets the shortest TTL the bucket takes. The put is a
compare-and-swap on the version read: an object changed meanwhile is left to its new writer.

A restamp is a new version (new sequence, nuid and mtime) that every watcher sees: it cannot
restate the old one, which a restatement keeps beneath it (``ObjectInfo.rolls_up``) and which,
having no TTL, would outlive it and stand for the object again (docs/lifecycle.md).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from natsobj.aio.put_modes import PutMode
from natsobj.aio.store import ObjectStore
from natsobj.errors import NatsObjError, ObjectChanged, ObjectNotFound, costs_only_its_object
from natsobj.lifecycle import LifecycleRule, current_rule
from natsobj.model import ObjectInfo, kept_chunk_size


@dataclass
class Restamp:
    """One object a rule says should expire and that does not: its rule and the TTL the
    restamp gives it; ``done`` once restamped, ``skipped`` (why) when it changed meanwhile,
    ``failed`` (the error) when it could not be restamped (its bytes do not verify, ...)."""

    info: ObjectInfo
    rule: LifecycleRule
    ttl: timedelta
    done: bool = False
    skipped: str = ""
    failed: str = ""


def _due(info: ObjectInfo, rules: list[LifecycleRule], now: datetime) -> Restamp | None:
    if info.deleted or info.is_link or info.offloaded or info.expires is not None:
        return None
    rule = current_rule(rules, info.name)
    if rule is None or rule.ttl is None:
        return None
    age = now - info.mtime if info.mtime is not None else timedelta(0)
    left = math.floor((rule.ttl - age).total_seconds())
    return Restamp(info, rule, timedelta(seconds=max(1, left)))


async def plan(store: ObjectStore) -> list[Restamp]:
    """The objects the bucket's rules say should expire and that carry no expiry, by name."""
    rules = await store.lifecycle_rules()
    if not any(rule.ttl for rule in rules):
        return []
    now = datetime.now(UTC)
    due = []
    async for info in store.iter_list():
        candidate = _due(info, rules, now)
        if candidate is None:
            continue
        # confirm from the record itself (a name index filled by an older natsobj kept no expiry)
        candidate.info = await store.get_info(info.name)
        if candidate.info.expires is None:
            due.append(candidate)
    return sorted(due, key=lambda r: r.info.name)


async def apply(store: ObjectStore, restamps: list[Restamp]) -> list[Restamp]:
    """Restamp each planned object (see the module's docstring); returns them, marked. One
    object that fails is marked and the rest are restamped: only a lost server or bucket ends
    the run."""
    for restamp in restamps:
        info = restamp.info
        headers: dict[str, list[str] | str] = dict(info.headers)
        try:
            await store.put(
                info.name,
                _content(store, info),
                description=info.description,
                headers=headers,
                metadata=info.metadata,
                chunk_size=kept_chunk_size(info.chunk_size),
                mode=PutMode.replacing(info),
                ttl=restamp.ttl,
            )
            restamp.done = True
        except (ObjectChanged, ObjectNotFound) as exc:
            restamp.skipped = f"changed meanwhile ({exc.message})"
        except NatsObjError as exc:
            if not costs_only_its_object(exc):
                raise
            restamp.failed = str(exc)
    return restamps


async def _content(store: ObjectStore, info: ObjectInfo) -> AsyncIterator[bytes]:
    """The version's bytes, checked against its digest at the end (a mismatch fails the put,
    which then stores nothing)."""
    reader = store.reader(info)
    try:
        async for chunk in reader:
            yield chunk
    finally:
        await reader.close()


__all__ = ["Restamp", "apply", "plan"]
