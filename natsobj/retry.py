"""The one retry policy: when an operation is tried again, how long it pauses first, and the
one error type that says "asking again may cure this".

Every retry in natsobj (a JetStream call through a leader election, a put window's resend, a
read waiting for a lagging replica, a compare-and-swap that met another writer, a long-running
watch restarted after an outage) pauses by the same rule: capped exponential backoff with
jitter. The rows at the end of this module are the only place its figures are written; a site
that needs a different budget takes another row (more or fewer tries, or a deadline given at
the call) rather than a scheme of its own.

Jitter only ever shortens a pause (down to ``1 - JITTER`` of it), so that clients retrying in
step drift apart, while every bound documented from the un-jittered figures (docs/production.md)
stays an upper bound.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from natsobj.errors import NatsObjError

# The share of a pause jitter may take off: pauses run from (1 - JITTER) to 1 times the step.
JITTER = 0.25


class RetryableError(NatsObjError):
    """A failure that asking again may cure: the server asked to slow down (429), nobody
    answered for a moment (503, no responders, an unanswered request or acknowledgement), or
    a cluster is electing a leader. ``final`` is what to raise once no retry is left: the
    error a caller acts on (``NotConnected``, ``ClusterUnavailable``...), this one itself when
    there is nothing more specific."""

    def __init__(
        self,
        message: str,
        *,
        bucket: str | None = None,
        name: str | None = None,
        hint: str | None = None,
        cause: NatsObjError | None = None,
    ) -> None:
        super().__init__(message, bucket=bucket, name=name, hint=hint)
        self.cause = cause

    @classmethod
    def wrapping(cls, error: NatsObjError) -> RetryableError:
        """``error``, marked as one a retry may cure; raised as it is when none is left."""
        wrapped = cls(str(error), cause=error)
        wrapped.bucket, wrapped.name = error.bucket, error.name
        return wrapped

    @property
    def final(self) -> NatsObjError:
        return self.cause if self.cause is not None else self


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try and how long to pause between tries: the ``n``-th retry pauses
    ``min(first * 2**(n - 1), cap)`` seconds, less up to ``JITTER`` of it. ``attempts`` is
    the number of tries in all (the first included); None: until a deadline the caller keeps
    (``pause`` never sleeps past it), or for as long as the caller wants."""

    first: float
    cap: float
    attempts: int | None = None

    def tries(self) -> Iterator[int]:
        """The try numbers, from 0: ``attempts`` of them, or without end."""
        return iter(range(self.attempts)) if self.attempts is not None else itertools.count()

    def delay(self, retry: int) -> float:
        """The pause before retry number ``retry`` (1 for the first retry)."""
        step = min(self.first * 2 ** max(retry - 1, 0), self.cap)
        return step * (1 - JITTER * random.random())

    async def pause(self, retry: int, *, deadline: float | None = None) -> None:
        """Sleep before retry number ``retry``; never past ``deadline`` (event loop time)."""
        delay = self.delay(retry)
        if deadline is not None:
            delay = min(delay, max(deadline - asyncio.get_running_loop().time(), 0.0))
        await asyncio.sleep(delay)

    def pause_blocking(self, retry: int) -> None:
        """``pause`` for blocking code (a Spark task's commit)."""
        time.sleep(self.delay(retry))


# -- the rows: every retry budget of natsobj, in one place --------------------------------------

# A JetStream call in a cluster, through a leader election or a lost node: until the
# connection's failover_timeout, no pause longer than a quarter second, so a new leader is
# found soon after it is elected.
FAILOVER = RetryPolicy(first=0.05, cap=0.25)
# A put window's chunks sent again after a refusal (429), no responders or a lost
# acknowledgement: outside a cluster six resends (a cluster's budget is its failover_timeout).
RESEND = RetryPolicy(first=0.1, cap=2.0, attempts=7)
# A read from a replica that trails the leader: longer in all than a healthy replica ever
# trails, then ReplicaLagging.
REPLICA_CATCH_UP = RetryPolicy(first=0.01, cap=0.5, attempts=20)
# A compare-and-swap that met another writer, tried again over the version that writer stored:
# a short jittered pause spreads writers racing for one name.
CONFLICT = RetryPolicy(first=0.002, cap=0.1, attempts=20)
# An operation that raced another writer's change and has a fallback or a clear error after a
# few tries: an atomic batch whose commit met another writer (then the put goes today's way,
# which re-publishes only the meta record), a read that raced an overwrite (then ObjectChanged).
RACED = RetryPolicy(first=CONFLICT.first, cap=CONFLICT.cap, attempts=3)
# A long-running loop resumed after an outage (an Airflow trigger's watch, the archiver): for as
# long as it runs, never more than half a minute between tries.
RESUME = RetryPolicy(first=0.5, cap=30.0)
