"""A bucket's expiry settings as a put needs them: its lifecycle rules, whether its stream
allows per-message TTLs and its delete-marker TTL, read from the stream's config and kept
for ``REFRESH_SECONDS`` so a put costs no extra round trip (``natsobj.lifecycle`` has the
rules and the arithmetic; this module the reading, caching and the TTL headers)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from natsobj.aio.stream import BucketStream
from natsobj.errors import BadLifecycleRule, ExpiryNotEnabled, NatsObjError
from natsobj.lifecycle import (
    LIFECYCLE_METADATA_KEY,
    LifecycleRule,
    chunk_ttl,
    decode_rules,
    encode_rules,
    meta_ttl,
    resolve_ttl,
    server_supports_ttl,
    whole_seconds,
)
from natsobj.model import StreamInfo
from natsobj.wire import MSG_TTL

# How long a store trusts the rules it read: another process's set_lifecycle_rules reaches
# this one's puts within this time (a store made by client.store() reads them fresh).
REFRESH_SECONDS = 30.0

log = logging.getLogger(__name__)


@dataclass
class PutExpiry:
    """The TTLs of one put: its chunks' header now, its record's once the chunks are in."""

    seconds: int  # the object's TTL as the server keeps it
    marker_ttl: timedelta | None
    started: float  # time.monotonic() before the first chunk went out
    expires: datetime | None = None  # once the record's header is made (this client's clock)

    @property
    def chunk_headers(self) -> dict[str, str]:
        return {MSG_TTL: str(chunk_ttl(self.seconds, self.marker_ttl))}

    def meta_headers(self, bucket: str, name: str) -> dict[str, str]:
        """The record's ``Nats-TTL``: what is left of the object's TTL, counted from its first
        chunk. A put that outlasted its TTL is refused: the object would be born expired."""
        seconds = meta_ttl(self.seconds, time.monotonic() - self.started, self.marker_ttl)
        if seconds is None:
            raise NatsObjError(
                f"the put took longer than the object's TTL ({self.seconds}s)",
                bucket=bucket,
                name=name,
                hint="Put it with a longer ttl, or without one.",
            )
        self.expires = datetime.now(UTC) + timedelta(seconds=seconds)
        return {MSG_TTL: str(seconds)}


@dataclass(frozen=True)
class _Snapshot:
    rules: list[LifecycleRule]
    allow_msg_ttl: bool
    marker_ttl: timedelta | None
    read_at: float
    # rules that could not be read: puts refuse (they could expire what a rule keeps, or
    # keep what it expires) until set_lifecycle_rules replaces them; reads are unaffected
    unreadable: str = ""

    def checked_rules(self, bucket: str) -> list[LifecycleRule]:
        if self.unreadable:
            raise NatsObjError(
                self.unreadable,
                bucket=bucket,
                hint=BadLifecycleRule.hint,
            )
        return self.rules


def _snapshot(config: dict[str, Any]) -> _Snapshot:
    marker = int(config.get("subject_delete_marker_ttl") or 0)
    try:
        rules, unreadable = decode_rules(config.get("metadata")), ""
    except ValueError as exc:
        rules, unreadable = [], str(exc)
    return _Snapshot(
        rules=rules,
        allow_msg_ttl=bool(config.get("allow_msg_ttl")),
        marker_ttl=timedelta(microseconds=marker / 1000) if marker else None,
        read_at=time.monotonic(),
        unreadable=unreadable,
    )


class BucketExpiry:
    """One store's view of its expiry settings (``ObjectStore.expiry``)."""

    def __init__(self, stream: BucketStream, info: StreamInfo, server_version: Any) -> None:
        self.stream = stream
        self.bucket = stream.bucket
        self._server_version = server_version
        self._snapshot = _Snapshot([], allow_msg_ttl=False, marker_ttl=None, read_at=0.0)
        self.note(info)

    def note(self, info: StreamInfo) -> None:
        """Take the settings of a stream info read for another reason; an unusable rule is
        warned about once, when it first shows up."""
        before = {rule for rule in self._snapshot.rules if rule.problem}
        self._snapshot = _snapshot(info.config)
        for rule in self._snapshot.rules:
            if rule.problem and rule not in before:
                log.warning(
                    "bucket %r: lifecycle rule %r cannot be used (%s): the other rules still"
                    " apply, and a put it matches is refused until the rules are set again",
                    self.bucket,
                    rule.pattern,
                    rule.problem,
                )

    async def _current(self, *, fresh: bool = False) -> _Snapshot:
        if fresh or time.monotonic() - self._snapshot.read_at > REFRESH_SECONDS:
            self.note(await self.stream.info())
        return self._snapshot

    async def rules(self, *, fresh: bool = True) -> list[LifecycleRule]:
        return list((await self._current(fresh=fresh)).checked_rules(self.bucket))

    async def set_rules(self, rules: Iterable[LifecycleRule]) -> list[LifecycleRule]:
        """Keep ``rules`` (in order; [] clears them) in the stream metadata. The other
        metadata keys (the archive's) are kept; a stream admin's permission is needed."""
        rules = list(rules)
        encoded = encode_rules(rules) if rules else None
        self.note(await self.stream.set_metadata(LIFECYCLE_METADATA_KEY, encoded))
        return rules

    async def plan(self, name: str, ttl: timedelta | None) -> PutExpiry | None:
        """The expiry of a put of ``name`` (None: it never expires); ExpiryNotEnabled when it
        should expire and the bucket cannot."""
        snapshot = await self._current()
        rules = snapshot.rules if ttl is not None else snapshot.checked_rules(self.bucket)
        resolved = resolve_ttl(ttl, rules, name, bucket=self.bucket)
        if resolved is None:
            return None
        if not snapshot.allow_msg_ttl:
            snapshot = await self._current(fresh=True)  # update_store may have turned it on
        if not snapshot.allow_msg_ttl:
            raise self.not_enabled(name, "it should expire in " + str(resolved))
        return PutExpiry(
            whole_seconds(resolved, snapshot.marker_ttl), snapshot.marker_ttl, time.monotonic()
        )

    async def seconds_left(self, expires: datetime) -> int:
        """Whole seconds until ``expires`` by the server's clock, rounded down (0: expired):
        the ``Nats-TTL`` of a record that replaces one and keeps its expiry (``update_meta``,
        a rename), so the new record still goes before the chunks."""
        info = await self.stream.info()
        self.note(info)
        now = info.server_time
        return max(0, int((expires - now).total_seconds())) if now is not None else 0

    def not_enabled(self, name: str | None, why: str) -> ExpiryNotEnabled:
        version = self._server_version
        if version is not None and not server_supports_ttl((version.major, version.minor)):
            return ExpiryNotEnabled(
                f"{why}, but per-object TTLs need nats-server 2.11 or later; this server is"
                f" {version.major}.{version.minor}.{version.patch}",
                bucket=self.bucket,
                name=name,
                hint="Upgrade the NATS servers, or put without a ttl (and without rules).",
            )
        return ExpiryNotEnabled(
            f"{why}, but the bucket does not allow per-object TTLs", bucket=self.bucket, name=name
        )


__all__ = ["REFRESH_SECONDS", "BucketExpiry", "PutExpiry"]
