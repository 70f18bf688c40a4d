"""Check every indexed version's archived bytes against its digest, and that nothing the
index points at is missing: on every target, each copy a target's index says it holds."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.target import ArchiveTarget, ArchiveTargetError
from natsobj.archive.targets import ArchiveTargets, holder_urls
from natsobj.model import digest_bytes


@dataclass
class VerifyReport:
    checked: int = 0
    bytes: int = 0
    bad: list[tuple[ArchiveRecord, str]] = field(default_factory=list)
    skipped: list[ArchiveRecord] = field(default_factory=list)
    duplicates: int = 0  # the same sequence in two segments (never expected)

    @property
    def ok(self) -> bool:
        return not self.bad and not self.duplicates


async def verify(
    target: ArchiveTarget | ArchiveTargets,
    *,
    on_checked: Callable[[ArchiveRecord], None] | None = None,
) -> VerifyReport:
    report = VerifyReport()
    for member in ArchiveTargets.of(target).members:
        await _verify_one(member.target, report, on_checked)
    return report


async def _verify_one(
    target: ArchiveTarget,
    report: VerifyReport,
    on_checked: Callable[[ArchiveRecord], None] | None,
) -> None:
    """One target's index, and the bytes it says this target holds (a record naming no
    target is from a one-target archive: its bytes are here)."""
    seen: set[int] = set()
    for key in await index.segment_keys(target):
        data = await target.get_bytes(key)
        for record in index.decode_segment(data or b""):
            if record.sequence in seen:
                report.duplicates += 1
                continue
            seen.add(record.sequence)
            if record.kind == index.SKIPPED:
                report.skipped.append(record)
            if record.kind != index.PUT:
                continue  # meta updates point at bytes a put record already checks
            if record.targets and target.url not in holder_urls(record):
                continue  # held by another target, checked there
            problem = await _check(target, record)
            report.checked += 1
            report.bytes += record.length
            if problem:
                report.bad.append((record, f"{target.url}: {problem}"))
            if on_checked is not None:
                on_checked(record)


async def _check(target: ArchiveTarget, record: ArchiveRecord) -> str | None:
    check = BytesCheck(record)
    if (problem := check.unusable_digest()) is not None:
        return problem
    try:
        async for piece in target.stream(record.key, record.offset, record.offset + record.length):
            check.update(piece)
    except ArchiveTargetError as exc:
        return f"cannot read {record.key}: {exc.message}"
    return check.problem()


class BytesCheck:
    """The one check of archived bytes against their index record, for ``verify``, restore,
    offload and read-through alike: the index digest must be a SHA-256 (an empty one proves
    nothing, so it fails too), and the bytes must have its size and hash."""

    def __init__(self, record: ArchiveRecord) -> None:
        self.record = record
        self.sha = hashlib.sha256()
        self.size = 0

    def unusable_digest(self) -> str | None:
        """Why the index digest cannot verify anything, known before any byte is read."""
        expected = digest_bytes(self.record.digest)
        if expected is None or len(expected) != self.sha.digest_size:
            return f"{self.record.key}: the index digest {self.record.digest!r} is not a SHA-256"
        return None

    def update(self, piece: bytes) -> None:
        self.sha.update(piece)
        self.size += len(piece)

    def problem(self) -> str | None:
        """Why the bytes read are not the record's, or None when they are."""
        record = self.record
        if (unusable := self.unusable_digest()) is not None:
            return unusable
        if self.size != record.size:
            return (
                f"{record.key} holds {self.size} bytes at offset {record.offset}, "
                f"expected {record.size}"
            )
        if digest_bytes(record.digest) != self.sha.digest():
            return f"{record.key} at offset {record.offset} does not match {record.digest}"
        return None
