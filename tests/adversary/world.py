"""What the adversarial test knows to be true, and the checks every step is held to.

``World`` is the model: the victim bucket B (the adversary cannot write it; its bytes carry a
marker nothing else ever writes, so a byte of B showing up in anything read from A is proof a
path left its bucket), the attacked bucket A, what natsobj itself wrote there (each honest
object's true bytes), which names the adversary has touched, and the verified content of
every record version whose content is known. ``call`` runs one natsobj call under the
invariants that hold for every path: it returns within its bound, allocates at most
``MEMORY_BOUND`` at its peak, and raises nothing but natsobj's typed errors.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import os
import time
import traceback
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from natsobj.errors import NatsObjError
from natsobj.model import ObjectInfo, digest_of
from natsobj.names import meta_subject
from natsobj.sync import run
from tests.adversary.wire import AdversaryWire

T = TypeVar("T")

# A call that needs one server round trip or a few takes milliseconds here: one over these
# bounds is stuck (a catastrophic glob, a loop that never ends), not slow.
CALL_BOUND = 5.0
TRANSFER_BOUND = 15.0  # a whole-bucket sync or recursive get
MEMORY_BOUND = 48 * 2**20  # the objects here are at most a few hundred KiB
MTIME_SLACK = 2.0  # seconds between natsobj's mtime and the server's time of the message
SECRET = b"B-SECRET-"  # in every object of B, and written nowhere else
# The face-level errors fsspec's protocol asks for; natsobj raises them with its typed
# error as the cause where there is one.
FS_ERRORS: tuple[type[BaseException], ...] = (
    NatsObjError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
)
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="adversary")


class Violation(AssertionError):
    """An invariant failed; the message says which and where."""


@dataclass
class Honest:
    """An object natsobj wrote in A: its true bytes and the version's record."""

    data: bytes
    nuid: str
    sequence: int


@dataclass
class World:
    url: str
    wire: AdversaryWire
    client: Any  # natsobj.aio.Client on the facade's loop
    a: Any  # natsobj.aio.ObjectStore for A
    b: Any  # natsobj.aio.ObjectStore for B
    b_objects: dict[str, bytes]
    honest: dict[str, Honest] = field(default_factory=dict)
    tainted: set[str] = field(default_factory=set)
    # the text each honest Pipes chunk sealed, by its name (each written once)
    pipes: dict[str, str] = field(default_factory=dict)
    # content of a record version of A by its meta sequence, where the verified bytes are
    # known: natsobj's own writes, and adversarial records whose chunks stored before them
    # match their digest, size and count
    content: dict[int, bytes] = field(default_factory=dict)
    # sequences that are a new version and must be reported by changes and watches
    must_report: set[int] = field(default_factory=set)
    rules_attacked: bool = False  # the admin wrote lifecycle metadata natsobj did not
    changes_cursor: int = 0
    watch_cursor: int = 0
    watcher: Any = None
    s3: Any = None  # a boto3 S3 client of a natsobj gateway on the same server
    names_seen: set[str] = field(default_factory=set)
    # the bytes of every version natsobj wrote in A, by version id (tests/adversary/version_rows)
    versions: dict[str, bytes] = field(default_factory=dict)
    adversary_nuids: set[str] = field(default_factory=set)

    @property
    def bucket(self) -> str:
        return str(self.a.bucket)

    # -- running a call under the invariants ----------------------------------------------------

    def call(
        self,
        label: str,
        make: Callable[[], Awaitable[T]],
        *,
        bound: float = CALL_BOUND,
        allowed: tuple[type[BaseException], ...] = (NatsObjError,),
    ) -> tuple[bool, Any]:
        """Run an async natsobj call on the facade's loop: (True, result) or (False, the
        typed error). Anything else, or a call over its time or memory bound, fails the test."""

        async def bounded() -> T:
            return await asyncio.wait_for(make(), bound)

        return self._measured(label, lambda: run(bounded(), timeout=bound + 5), bound, allowed)

    def call_blocking(
        self,
        label: str,
        fn: Callable[[], T],
        *,
        bound: float = CALL_BOUND,
        allowed: tuple[type[BaseException], ...] = FS_ERRORS,
    ) -> tuple[bool, Any]:
        """A blocking face's call (fsspec, the CLI), run in a worker thread so a call that
        never returns is reported at its bound instead of hanging the suite."""

        def waited() -> T:
            future = _pool.submit(fn)
            try:
                return future.result(timeout=bound + 5)
            except concurrent.futures.TimeoutError:
                raise Violation(f"{label}: still running after {bound + 5:.0f}s") from None

        return self._measured(label, waited, bound, allowed)

    def _measured(
        self,
        label: str,
        fn: Callable[[], T],
        bound: float,
        allowed: tuple[type[BaseException], ...],
    ) -> tuple[bool, Any]:
        tracemalloc.start()
        started = time.monotonic()
        try:
            result: tuple[bool, Any] = (True, fn())
        except Violation:
            raise
        except TimeoutError as exc:
            raise Violation(f"{label}: did not return within {bound}s") from exc
        except allowed as exc:
            result = (False, exc)
        except BaseException as exc:
            raise Violation(
                f"{label}: raised {type(exc).__name__}, not one of natsobj's typed errors:\n"
                + "".join(traceback.format_exception(exc))
            ) from exc
        finally:
            elapsed = time.monotonic() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        if elapsed > bound:
            raise Violation(f"{label}: took {elapsed:.1f}s, over its {bound}s bound")
        if peak > MEMORY_BOUND:
            raise Violation(f"{label}: peaked at {peak / 2**20:.0f} MiB, over {MEMORY_BOUND >> 20}")
        return result

    # -- checks on what a call returned ----------------------------------------------------------

    def check_bytes(self, label: str, data: bytes) -> None:
        """Nothing read through A may hold a byte of B (the adversary cannot know them)."""
        if SECRET in data:
            raise Violation(f"{label}: returned bytes of bucket B, which nothing in A holds")

    def check_info(self, label: str, info: ObjectInfo, *, server_time: bool = True) -> None:
        """A record natsobj reports for A: in A, on the subject of its own name, at the
        sequence and (``server_time``) with the time the server gave that message."""
        if info.bucket != self.bucket:
            raise Violation(f"{label}: reported {info.name!r} in bucket {info.bucket!r}")
        if info.sequence is None or info.expired:
            return
        stored = self.wire.msg(self.bucket, info.sequence)
        if stored is None:
            return  # rolled up since (a later write on the subject); nothing left to compare
        expected = meta_subject(self.bucket, info.name)
        if stored.subject != expected:
            raise Violation(
                f"{label}: reported {info.name!r} at sequence {info.sequence}, which the"
                f" server holds on {stored.subject!r}, not {expected!r}"
            )
        if (
            server_time
            and info.mtime is not None
            and abs(_seconds(info.mtime, stored.time)) > MTIME_SLACK
        ):
            raise Violation(
                f"{label}: reported {info.name!r} with mtime {info.mtime.isoformat()}, the"
                f" server stored it at {stored.time.isoformat()}"
            )

    def current_sequence(self, name: str) -> int | None:
        """The sequence of the record the server holds for ``name`` in A now."""
        last = self.wire.last(self.bucket, meta_subject(self.bucket, name))
        return last.seq if last is not None else None

    def known_content(self, name: str) -> bytes | None:
        sequence = self.current_sequence(name)
        return self.content.get(sequence) if sequence is not None else None

    def intact(self) -> list[str]:
        """The honest objects of A that no adversarial write touched."""
        return sorted(set(self.honest) - self.tainted)

    def check_listing(self, label: str, infos: list[ObjectInfo]) -> None:
        for info in infos:
            self.check_info(label, info)
        listed = {info.name: info for info in infos}
        for name in self.intact():
            if name not in listed:
                raise Violation(f"{label}: left out {name!r}, an object nothing touched")
            if listed[name].nuid != self.honest[name].nuid:
                raise Violation(f"{label}: reported {name!r} with another version's nuid")

    def check_reported(self, label: str, infos: list[ObjectInfo], since: int) -> None:
        """Every new version written after ``since`` that is still the name's current one
        is among ``infos`` (a change feed: ``changes``, a live watch)."""
        reported = {info.sequence for info in infos}
        for name in self.names_seen:
            sequence = self.current_sequence(name)
            if sequence is None or sequence <= since or sequence not in self.must_report:
                continue
            if sequence not in reported:
                raise Violation(
                    f"{label}: did not report the new version of {name!r} at sequence {sequence}"
                )

    # -- the model's bookkeeping -----------------------------------------------------------------

    def remember_put(self, name: str, data: bytes, info: ObjectInfo) -> None:
        assert info.sequence is not None
        self.honest[name] = Honest(data, info.nuid, info.sequence)
        self.tainted.discard(name)
        self.content[info.sequence] = data
        self.versions[info.nuid] = data
        self.must_report.add(info.sequence)
        self.names_seen.add(name)

    def taint_nuid(self, nuid: str) -> None:
        """An adversarial write to the chunks of ``nuid``: its owners are no longer honest."""
        self.tainted.update(name for name, h in self.honest.items() if h.nuid == nuid)

    def verified_content(self, record: dict[str, Any], sequence: int) -> bytes | None:
        """The bytes a record published at ``sequence`` verifiably stands for: its chunks
        stored before it, when they match its digest, size and count; else None."""
        nuid, digest = record.get("nuid"), record.get("digest")
        if not isinstance(nuid, str) or not nuid.isalnum() or not isinstance(digest, str):
            return None
        if (record.get("options") or {}).get("link") is not None:
            return None
        chunks = self.wire.chunks_before(self.bucket, f"$O.{self.bucket}.C.{nuid}", sequence)
        data = b"".join(chunks)
        if (
            digest_of(data) == digest
            and record.get("size") == len(data)
            and record.get("chunks") == len(chunks)
        ):
            return data
        return None


def random_bytes(size: int, seed: int) -> bytes:
    """Deterministic for a seed (hypothesis replays), distinct across objects."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


def secret_bytes(size: int) -> bytes:
    return (SECRET + os.urandom(8).hex().encode()) * (size // 25 + 1)


def _seconds(one: datetime, other: datetime) -> float:
    return (one - other).total_seconds()
