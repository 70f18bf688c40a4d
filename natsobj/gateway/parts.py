"""The parts an object was completed from, kept with it so GetObject and HeadObject by
``partNumber`` and GetObjectAttributes' ``ObjectParts`` answer as S3 does without a chunk read.

The record's ``LAYOUT`` header lists each part's size and, when the upload had a checksum
algorithm, its checksum (``size:checksum`` or ``size``, comma-separated), bound to the record's
digest like every value the gateway keeps (natsobj.gateway.etags): a record another client
rewrote has no parts. The header costs the record about 12 bytes a part, plus the checksum
(8 to 44 bytes)."""

from __future__ import annotations

from dataclasses import dataclass

from natsobj.gateway import checksums, etags
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo

LAYOUT = "S3-Parts"
MAX_PART_NUMBER = 10000  # S3's


@dataclass(frozen=True)
class Part:
    number: int
    start: int
    size: int
    checksum: str | None


def bind(sizes_and_checksums: list[tuple[int, str | None]], digest: str) -> dict[str, list[str]]:
    """The record header keeping the parts of the content of ``digest``."""
    value = ",".join(
        f"{size}:{checksum}" if checksum else str(size) for size, checksum in sizes_and_checksums
    )
    return etags.bind(LAYOUT, value, digest)


def layout(info: ObjectInfo) -> list[Part] | None:
    """The object's parts in order; None for an object not completed from parts through the
    gateway (or rewritten since), or a header that does not add up to the object's size."""
    value = etags.bound(info, LAYOUT)
    if value is None:
        return None
    found: list[Part] = []
    start = 0
    for number, entry in enumerate(value.split(","), start=1):
        size_text, _, checksum = entry.partition(":")
        if not (size_text.isascii() and size_text.isdigit()) or (
            checksum and not checksums.well_formed(checksum)
        ):
            return None
        found.append(Part(number, start, int(size_text), checksum or None))
        start += int(size_text)
    return found if start == info.size else None


def part_number(value: str) -> int:
    """A ``partNumber`` query parameter; InvalidArgument outside 1 to 10,000."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_PART_NUMBER:
        raise S3Error(
            "InvalidArgument", f"Part number must be an integer between 1 and {MAX_PART_NUMBER}"
        )
    return number


def select(info: ObjectInfo, number: int) -> tuple[Part, int]:
    """Part ``number`` of the object and how many it has: an object not made of parts is one
    part, as S3 has it; InvalidPartNumber past the last."""
    found = layout(info)
    if found is None:
        found = [Part(1, 0, info.size, None)]
    if number > len(found):
        raise S3Error("InvalidPartNumber", "The requested partnumber is not satisfiable")
    return found[number - 1], len(found)
