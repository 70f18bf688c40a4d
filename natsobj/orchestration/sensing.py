"""What a sensor waits for, fed by listings or by the change feed, the same on every face.

``AllPresent`` is "every one of these names or patterns has a live object" (the Amazon
provider's ``S3KeySensor`` given several keys); ``QuietPrefix`` is "nothing under this prefix
was put or deleted for a while, and enough objects are there" (its ``S3KeysUnchangedSensor``).
Both take object records one at a time, whether a listing or a watch delivered them, so a
poke that lists and a trigger that watches decide by one rule. Time is handed in by the
caller (a monotonic clock), which keeps the rule free of any event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from natsobj.errors import PrefixChanged
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo


class AllPresent:
    """Live objects matching each of ``matchers``, from the records observed so far.

    A put (a record not deleted) of a matching name that ``accept`` takes makes it a candidate
    of every matcher it matches, replacing that name's earlier record; a delete removes it.
    ``found()`` is one object per matcher, each the candidate with the lowest meta sequence,
    once every matcher has one. Memory grows with the matching names, not the bucket."""

    def __init__(
        self,
        matchers: Sequence[NameMatcher],
        accept: Callable[[ObjectInfo], bool] | None = None,
    ) -> None:
        if not matchers:
            raise ValueError("give at least one name or pattern to wait for")
        self.matchers = tuple(matchers)
        self._accept = accept
        self._live: list[dict[str, ObjectInfo]] = [{} for _ in self.matchers]

    def observe(self, info: ObjectInfo) -> None:
        """One record of ``info.name``, newer than any observed before for that name."""
        keep = not info.deleted and (self._accept is None or self._accept(info))
        for matcher, live in zip(self.matchers, self._live, strict=True):
            if not matcher.matches(info.name):
                continue
            if keep:
                live[info.name] = info
            else:
                live.pop(info.name, None)

    def found(self) -> list[ObjectInfo] | None:
        """One object per matcher, in the matchers' order; None while one has none."""
        if not all(self._live):
            return None
        return [min(live.values(), key=lambda i: i.sequence or 0) for live in self._live]

    def missing(self) -> list[NameMatcher]:
        """The matchers still without an object, for the log."""
        return [m for m, live in zip(self.matchers, self._live, strict=True) if not live]

    @property
    def literal_prefix(self) -> str:
        """A prefix every matching name has: what a listing can be narrowed to."""
        prefixes = [matcher.literal_prefix for matcher in self.matchers]
        shortest = min(prefixes, key=len)
        for index, char in enumerate(shortest):
            if any(prefix[index] != char for prefix in prefixes):
                return shortest[:index]
        return shortest


class QuietPrefix:
    """Whether a prefix has been quiet: no put or delete under it for ``inactivity_period``
    seconds, with at least ``min_objects`` objects there.

    The quiet period counts from the first observation, as the Amazon provider's sensor counts
    from its first poke. ``previous_objects`` are names known to be there before: a listing
    without one of them, or a delete of one, counts as a delete. A delete resets the period
    when ``allow_delete`` is true and raises ``PrefixChanged`` otherwise. A record seen again
    (the same meta sequence, as a listing and a watch that overlap deliver it) is no change."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        *,
        inactivity_period: float,
        min_objects: int = 1,
        allow_delete: bool = True,
        previous_objects: Iterable[str] = (),
        now: float,
    ) -> None:
        if inactivity_period < 0:
            raise ValueError("inactivity_period must be non-negative")
        if min_objects < 0:
            raise ValueError("min_objects must be non-negative")
        self.bucket = bucket
        self.prefix = prefix
        self.inactivity_period = float(inactivity_period)
        self.min_objects = min_objects
        self.allow_delete = allow_delete
        # name -> meta sequence of its current record (None: known only by name)
        self.present: dict[str, int | None] = dict.fromkeys(previous_objects)
        self.last_activity = now

    @property
    def quiet_at(self) -> float:
        """When the prefix is quiet unless something changes before."""
        return self.last_activity + self.inactivity_period

    def is_quiet(self, now: float) -> bool:
        """Quiet for the whole period, and with enough objects."""
        return now >= self.quiet_at and len(self.present) >= self.min_objects

    def observe(self, info: ObjectInfo, now: float) -> bool:
        """One change record from the feed; whether it was activity under the prefix."""
        if not info.name.startswith(self.prefix):
            return False
        if info.deleted:
            if info.name not in self.present:
                return False
            self._deleted([info.name])
            del self.present[info.name]
        else:
            known = self.present.get(info.name, -1)
            if known is None or known == info.sequence:  # a name known before, or seen already
                self.present[info.name] = info.sequence
                return False
            self.present[info.name] = info.sequence
        self.last_activity = now
        return True

    def seen(self, listing: Iterable[ObjectInfo], now: float) -> bool:
        """The prefix's objects as a listing has them now; whether anything changed since the
        last observation (a new name, a name put again, a name gone)."""
        current = {i.name: i.sequence for i in listing if i.name.startswith(self.prefix)}
        gone = [name for name in self.present if name not in current]
        if gone:
            self._deleted(gone)
        changed = bool(gone) or any(
            self.present.get(name, -1) not in (None, sequence) for name, sequence in current.items()
        )
        self.present = current
        if changed:
            self.last_activity = now
        return changed

    def _deleted(self, names: list[str]) -> None:
        if not self.allow_delete:
            shown = ", ".join(repr(name) for name in sorted(names)[:5])
            raise PrefixChanged(
                f"objects under prefix {self.prefix!r} were deleted while waiting for it to be "
                f"quiet ({shown})",
                bucket=self.bucket,
            )
