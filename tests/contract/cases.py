"""The cases every face's contract test is generated from (``natsobj.operation_options``):
for each option a face takes, the spellings users write and the value each must reach, and
the default the face applies when it is not given. A face module under tests/contract turns
each case into a real call of that face (an operator run, a materialization, a Spark query,
a CLI command, an fsspec call) and checks the value that reached the operation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from natsobj.operation_options import Face, Kind, Option, for_face

# What each kind's users write, and what it must mean.
SPELLINGS: dict[Kind, list[tuple[object, Any]]] = {
    Kind.BOOL: [
        ("true", True),
        ("on", True),
        ("YES", True),
        ("1", True),
        (True, True),
        ("false", False),
        ("off", False),
        ("no", False),
        ("0", False),
        (False, False),
    ],
    Kind.DURATION: [
        ("2d", timedelta(days=2)),
        ("1h30m", timedelta(minutes=90)),
        ("45", timedelta(seconds=45)),
        (45.0, timedelta(seconds=45)),
        (timedelta(hours=3), timedelta(hours=3)),
    ],
    Kind.TTL: [
        ("2d", timedelta(days=2)),
        ("90m", timedelta(minutes=90)),
        ("3600", timedelta(hours=1)),
        (60, timedelta(minutes=1)),
        (timedelta(hours=3), timedelta(hours=3)),
        ("never", timedelta(0)),
    ],
    Kind.SIZE: [("100MB", 100 * 10**6), ("1.5KiB", 1536), ("4096", 4096), (2048, 2048)],
    Kind.COUNT: [("5000", 5000), ("1_000", 1000), (7, 7)],
    Kind.VERSION_ID: [
        ("AbCdEfGhIjKlMnOpQrStU9", "AbCdEfGhIjKlMnOpQrStU9"),
        (" AbCdEfGhIjKlMnOpQrStU9 ", "AbCdEfGhIjKlMnOpQrStU9"),
        ("null", None),  # S3's id of the current version
    ],
}


@dataclass(frozen=True)
class Case:
    option: Option
    face: Face
    given: object  # what the user writes
    expected: Any  # the value the operation must receive

    @property
    def id(self) -> str:
        return f"{self.option.operation}.{self.option.name}={self.given!r}"


def spellings(option: Option) -> list[tuple[object, Any]]:
    """The spellings of ``option``: its kind's, or for a choice every choice and synonym in
    the case users may type it."""
    if option.kind in SPELLINGS:
        return SPELLINGS[option.kind]
    pairs: list[tuple[object, Any]] = [(c, c) for c in option.choices]
    pairs += [(c.upper(), c) for c in option.choices[:1]]
    pairs += list(option.synonyms.items())
    if option.kind is Kind.POSITION:
        pairs += [("7", 7), (7, 7)]
    return pairs


def cases(face: Face, operation: str) -> list[Case]:
    """Every spelling of every option of ``operation`` that ``face`` takes."""
    return [
        Case(option, face, given, expected)
        for option in for_face(face, operation).values()
        for given, expected in spellings(option)
    ]


def defaults(face: Face, operation: str) -> dict[str, Any]:
    """What ``face`` must apply for each option of ``operation`` it takes, when not given."""
    return {name: o.default_for(face) for name, o in for_face(face, operation).items()}
