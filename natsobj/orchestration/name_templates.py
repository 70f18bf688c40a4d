"""Object names as templates: ``daily/{date}.parquet`` matches ``daily/2026-11-01.parquet``
and reads ``date`` = ``2026-11-01`` from it, so a face can turn the name of a new object into a
partition key (the Dagster sensor's ``partition_key_template``).

A ``{field}`` stands for one or more characters within one ``/`` segment; the rest of the
template is literal (``{{`` and ``}}`` are literal braces, as in ``str.format``). A field ends
at the first occurrence of the literal text that follows it in its segment, and the text after
a segment's last field must end the segment, so ``{date}-{part}.parquet`` reads
``2026-11-01-3.parquet`` as ``date`` = ``2026``. Matching is one pass over the name with no
backtracking (names come from every writer of a bucket, so no name can make it slow). Two
fields with nothing between them would be ambiguous and are refused.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

# One segment of a template: its leading literal, then (field, literal after it) pairs.
_Segment = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class NameTemplate:
    """A compiled name template; ``fields_of(name)`` reads a matching name's fields."""

    template: str
    fields: tuple[str, ...] = field(init=False)
    _segments: tuple[_Segment, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segments = tuple(_parse_segment(self.template, s) for s in self.template.split("/"))
        names = [name for _, pairs in segments for name, _ in pairs]
        if not names:
            raise ValueError(
                f"name template {self.template!r} has no {{field}}: give one, such as "
                "'daily/{date}.parquet'"
            )
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"name template {self.template!r} names {', '.join(repeated)} more than once"
            )
        object.__setattr__(self, "fields", tuple(names))
        object.__setattr__(self, "_segments", segments)

    @property
    def literal_prefix(self) -> str:
        """The text before the first field: every matching name starts with it, so a listing
        can be narrowed to it."""
        prefix = []
        for lead, pairs in self._segments:
            prefix.append(lead)
            if pairs:
                break
            prefix.append("/")
        return "".join(prefix)

    def fields_of(self, name: str) -> dict[str, str] | None:
        """Each field's text in ``name``, or None when ``name`` does not match."""
        texts = name.split("/")
        if len(texts) != len(self._segments):
            return None
        values: dict[str, str] = {}
        for text, segment in zip(texts, self._segments, strict=True):
            if not _read_segment(text, segment, values):
                return None
        return values


def _parse_segment(template: str, segment: str) -> _Segment:
    try:
        parsed = list(string.Formatter().parse(segment))
    except ValueError as exc:
        raise ValueError(f"name template {template!r}: {exc}") from None
    # literals[k] comes before names[k], the last one after them all
    literals: list[str] = [""]
    names: list[str] = []
    for literal, name, spec, conversion in parsed:
        literals[-1] += literal
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(
                f"name template {template!r}: {{{name}}} is not a field; a field is a name "
                "such as {date}, with no format or conversion"
            )
        if names and not literals[-1]:
            raise ValueError(
                f"name template {template!r}: {{{names[-1]}}} and {{{name}}} have nothing "
                "between them, so where one ends is unknown"
            )
        names.append(name)
        literals.append("")
    return literals[0], tuple(zip(names, literals[1:], strict=True))


def _read_segment(text: str, segment: _Segment, values: dict[str, str]) -> bool:
    """Match one segment of a name, adding its fields to ``values``; no backtracking."""
    lead, pairs = segment
    if not pairs:
        return text == lead
    if not text.startswith(lead):
        return False
    position = len(lead)
    for i, (name, after) in enumerate(pairs):
        if i == len(pairs) - 1:
            end = len(text) - len(after)
            if end <= position or not text.endswith(after):
                return False
        else:
            end = text.find(after, position + 1)
            if end == -1:
                return False
        values[name] = text[position:end]
        position = end + len(after)
    return True
