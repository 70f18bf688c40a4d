"""The options of the store's operations, one row each, that every face is generated from.

``natsobj.settings`` is the table of how to connect and ``natsobj.store_config`` the table of
what a bucket is created with; this is the third: what an operation does (how long a put
keeps its object, where a change feed starts, whether it reports deletes, what a bucket
recreated under a cursor means, how cold an object must be to offload, how Parquet is
written). A row gives the option's name, kind, unit, vocabulary and default, and which faces
take it; a face whose ecosystem wants another default says so in its row, with the reason, so
defaults differ only where the table says and ``docs/options.md`` shows them side by side.

Every face reads its values through ``Option.parse``, so ``on``, ``yes`` and ``1`` mean true
and ``2d`` means two days on every face alike, and a face's parameter names come from
``Option.spelled``. The faces are named here only as table columns; the core's operations
take the parsed values and never ask which face called."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypedDict

from natsobj.parsing import (
    parse_bool,
    parse_count,
    parse_duration,
    parse_size,
    parse_ttl,
    parse_version_id,
)


class Face(enum.StrEnum):
    """A table column: a way users reach the operations."""

    PYTHON = "python"  # natsobj.aio / natsobj (keyword arguments)
    CLI = "cli"  # natsobj ... --flag
    AIRFLOW = "airflow"  # operator, sensor and trigger parameters
    DAGSTER = "dagster"  # config fields and builder keywords
    SPARK = "spark"  # .option(...) of the natsobj data source
    FSSPEC = "fsspec"  # filesystem and open() keywords


ALL_FACES = tuple(Face)


class Kind(enum.Enum):
    """What values an option takes, each read by the one parser in ``natsobj.parsing``."""

    BOOL = "true/false (yes/no, on/off, 1/0)"
    DURATION = "a duration (7d, 12h, 90m, 1h30m, or seconds)"
    TTL = "a duration, or never"
    SIZE = "a size in bytes (100MB, 1.5GiB, 4096)"
    COUNT = "a whole number >= 1"
    CHOICE = "one of the option's choices"
    POSITION = "a start position of the option's choices, or a meta sequence >= 1"
    VERSION_ID = "a version id, as a versions listing shows it (null: the current version)"


@dataclass(frozen=True)
class FaceRule:
    """How one face takes an option: under which name, and with which default when its
    ecosystem's convention differs from the core's (``why`` says which convention)."""

    spelling: str | None = None  # None: the face's own rendering of the option's name
    default: Any = ...  # ...: the option's default
    why: str = ""


SAME = FaceRule()


@dataclass(frozen=True)
class Option:
    """One option of one operation, as every face takes it."""

    operation: str
    name: str
    kind: Kind
    help: str
    faces: Mapping[Face, FaceRule]
    default: Any = None
    choices: tuple[str, ...] = ()
    # Other words for a choice: a face's older or ecosystem-native vocabulary.
    synonyms: Mapping[str, str] = field(default_factory=dict)

    def parse(self, value: object) -> Any:
        """The canonical value of anything a face may be given: text in the one vocabulary,
        or an already-typed value. None is unset (the caller applies ``default_for``)."""
        if value is None:
            return None
        what = self.name
        if self.kind is Kind.BOOL:
            return parse_bool(value, what=what)
        if self.kind is Kind.DURATION:
            return parse_duration(value, what=what)
        if self.kind is Kind.TTL:
            return parse_ttl(value, what=what)
        if self.kind is Kind.SIZE:
            return parse_size(value, what=what)
        if self.kind is Kind.COUNT:
            return parse_count(value, what=what)
        if self.kind is Kind.VERSION_ID:
            return parse_version_id(value, what=what)
        if self.kind is Kind.POSITION and not isinstance(value, str):
            return parse_count(value, what=what)
        text = str(value).strip().lower()
        if self.kind is Kind.POSITION and text.isdigit():
            return parse_count(text, what=what)
        text = self.synonyms.get(text, text)
        if text not in self.choices:
            words = [*self.choices, *self.synonyms]
            extra = " or a meta sequence >= 1" if self.kind is Kind.POSITION else ""
            raise ValueError(f"{what} must be one of {words}{extra}, not {value!r}")
        return text

    def describe(self) -> str:
        """The values the option takes, in words."""
        if self.kind is Kind.CHOICE:
            return "one of " + ", ".join(self.choices)
        if self.kind is Kind.POSITION:
            return ", ".join(self.choices) + ", or a meta sequence >= 1"
        return self.kind.value

    def takes(self, face: Face) -> bool:
        return face in self.faces

    def default_for(self, face: Face) -> Any:
        """The parsed default this face applies when the option is not given."""
        rule = self.faces[face]
        return self.default if rule.default is ... else self.parse(rule.default)

    def spelled(self, face: Face) -> str:
        """The option's name on ``face``: snake_case keywords, ``--kebab-case`` flags, and
        camelCase Spark options (Spark matches option names case-insensitively; ``snake_case``
        is accepted there too, see ``spark_keys``)."""
        rule = self.faces[face]
        if rule.spelling is not None:
            return rule.spelling
        if face is Face.CLI:
            return "--" + self.name.replace("_", "-")
        if face is Face.SPARK:
            head, *rest = self.name.split("_")
            return head + "".join(part.capitalize() for part in rest)
        return self.name

    def spark_keys(self) -> frozenset[str]:
        """Every lower-cased key a Spark option map may hold this option under."""
        return frozenset({self.spelled(Face.SPARK).lower(), self.name})


def _rows(operation: str, *options: Option) -> dict[str, Option]:
    assert all(o.operation == operation for o in options)
    return {o.name: o for o in options}


EVERYWHERE = {face: SAME for face in ALL_FACES}
TRIGGERING = "a feed that starts runs has nothing to run for a deleted object"

# Where a change feed starts: every change the bucket keeps, each object's current version
# then what follows, or only what happens from now on (then a meta sequence to start after).
EARLIEST, CURRENT, LATEST = "earliest", "current", "latest"
# What a cursor kept across a bucket's deletion and re-creation means: stop and say so, or
# start over from the new bucket's beginning.
ON_RECREATED = ("fail", "restart")

PUT = _rows(
    "put",
    Option(
        "put",
        "ttl",
        Kind.TTL,
        "How long the object lives after the put (never: kept whatever the bucket's"
        " lifecycle rules say); unset: the bucket's first matching lifecycle rule.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI, Face.AIRFLOW, Face.DAGSTER, Face.FSSPEC)},
    ),
)

GET = _rows(
    "get",
    Option(
        "get",
        "allow_missing_digest",
        Kind.BOOL,
        "Read an object whose record carries no SHA-256 (written by a client that writes"
        " none); its size and chunk count are still checked.",
        faces=EVERYWHERE,
        default=False,
    ),
    Option(
        "get",
        "follow_links",
        Kind.BOOL,
        "Follow an ADR-20 link into another bucket, reading the target with this client's"
        " rights (a link within its own bucket is always followed). Anyone who can write a"
        " bucket can plant a link to any other, so a face that reads for someone else (the"
        " gateway, operators, log readers, IO managers, Pipes) never takes it.",
        faces={Face.PYTHON: SAME, Face.CLI: SAME, Face.FSSPEC: SAME},
        default=False,
    ),
)


LIST = _rows(
    "list",
    Option(
        "list",
        "versions",
        Kind.BOOL,
        "List every version of each object, not only the current ones: the kept ones too,"
        " and those another client's purge lost, marked.",
        faces={Face.CLI: SAME, Face.FSSPEC: SAME},
        default=False,
    ),
)

# The version an operation on one object acts on, in each ecosystem's word for it: aws s3api's
# --version-id, s3fs's and the Amazon provider's version_id, and the key of a Dagster input's
# metadata that pins the version it loads, as a materialization records it
# (docs/versioning.md). The Python face takes the id itself (``version=``), read by no parser,
# so it is no column here.
VERSION = _rows(
    "version",
    Option(
        "version",
        "version",
        Kind.VERSION_ID,
        "The version of the object to read, remove for good or restore; unset (or null): the"
        " current version.",
        faces={
            Face.CLI: FaceRule(spelling="--version-id"),
            Face.AIRFLOW: FaceRule(spelling="version_id"),
            Face.FSSPEC: FaceRule(spelling="version_id"),
            Face.DAGSTER: FaceRule(spelling="version_id"),
        },
    ),
    Option(
        "version",
        "version_aware",
        Kind.BOOL,
        "Take version ids (a version_id keyword, a path's ?versionId=ID) and list versions;"
        " a filesystem without it refuses them, as s3fs's does, and reads ?versionId= as part"
        " of the name.",
        faces={Face.FSSPEC: SAME},
        default=False,
    ),
    Option(
        "version",
        "pin_materialized",
        Kind.BOOL,
        "Load an asset input at the version its upstream's latest materialization recorded,"
        " not the object's current version, so a run or a backfill reads exactly what Dagster"
        " wrote even after another writer replaced it; a version no longer kept fails the load.",
        faces={Face.DAGSTER: SAME},
        default=False,
    ),
)


class ReadOptions(TypedDict, total=False):
    """The ``get`` rows as the core's read calls take them (``store.get(name, **reading)``),
    for a face that carries them through several helpers as one value."""

    allow_missing_digest: bool
    follow_links: bool


FOLLOW = _rows(
    "follow",
    Option(
        "follow",
        "start",
        Kind.POSITION,
        "Where a change feed starts: earliest (every change the bucket keeps), current"
        " (each object's current version, then changes), latest (only changes from now on),"
        " or the meta sequence to start at.",
        faces={
            Face.PYTHON: SAME,
            Face.CLI: FaceRule(
                default=LATEST, why="like tail -f, a live view shows what happens from now on"
            ),
            Face.AIRFLOW: FaceRule(
                spelling="start_at",
                default=LATEST,
                why="an event-driven DAG reacts to what happens once it is deployed",
            ),
            Face.DAGSTER: FaceRule(
                default=EARLIEST,
                why="a new sensor, like dagster-aws's S3 sensor, sees the objects already there",
            ),
            Face.SPARK: FaceRule(
                spelling="startingSequence",
                default=EARLIEST,
                why="like Spark's file stream source, a new query processes what is there",
            ),
        },
        default=CURRENT,
        choices=(EARLIEST, CURRENT, LATEST),
        synonyms={"history": EARLIEST, "all": CURRENT, "new": LATEST},
    ),
    Option(
        "follow",
        "include_deletes",
        Kind.BOOL,
        "Report deletions (and expiries) as changes.",
        faces={
            Face.PYTHON: SAME,
            Face.CLI: SAME,
            Face.AIRFLOW: FaceRule(default=False, why=TRIGGERING),
            Face.DAGSTER: FaceRule(default=False, why=TRIGGERING),
            Face.SPARK: FaceRule(default=False, why="a table stream has no rows for a delete"),
        },
        default=True,
    ),
    Option(
        "follow",
        "include_version_events",
        Kind.BOOL,
        "Report versions' lock changes (set, changed, lifted, or an unreadable lock record)"
        " and versions removed for good, in order among the objects' changes.",
        faces={Face.PYTHON: SAME, Face.CLI: SAME},
        default=False,
    ),
    Option(
        "follow",
        "on_recreated",
        Kind.CHOICE,
        "A cursor that outlived its bucket (deleted and created again): fail says so and"
        " keeps the cursor; restart starts over from the new bucket's beginning.",
        faces={Face.AIRFLOW: SAME, Face.DAGSTER: SAME, Face.SPARK: SAME},
        default="fail",
        choices=ON_RECREATED,
    ),
)

ARCHIVE = _rows(
    "archive",
    Option(
        "archive",
        "give_up_after",
        Kind.DURATION,
        "How long a pass waits for an archive target that does not answer before it fails.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI, Face.AIRFLOW, Face.DAGSTER)},
        default=timedelta(minutes=5),
    ),
)

OFFLOAD = _rows(
    "offload",
    Option(
        "offload",
        "older_than",
        Kind.DURATION,
        "Only objects not written for this long.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI, Face.AIRFLOW, Face.DAGSTER)},
    ),
    Option(
        "offload",
        "larger_than",
        Kind.SIZE,
        "Only objects over this size.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI, Face.AIRFLOW, Face.DAGSTER)},
    ),
    Option(
        "offload",
        "expiry_margin",
        Kind.DURATION,
        "Never offload an object whose TTL runs out sooner than this.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI, Face.AIRFLOW, Face.DAGSTER)},
        default=timedelta(days=1),
    ),
    Option(
        "offload",
        "noncurrent_older_than",
        Kind.DURATION,
        "Also offload the versions a versioned bucket keeps, once noncurrent this long.",
        faces={f: SAME for f in (Face.PYTHON, Face.CLI)},
    ),
)

NO_COMPRESSION = "none"


def parquet_codec(compression: str) -> str | None:
    """write_parquet.compression as Arrow's Parquet writer takes it: ``none`` is no codec."""
    return None if compression == NO_COMPRESSION else compression


WRITE_PARQUET = _rows(
    "write_parquet",
    Option(
        "write_parquet",
        "compression",
        Kind.CHOICE,
        "The Parquet compression codec.",
        faces={Face.SPARK: SAME, Face.DAGSTER: SAME},
        default="zstd",
        choices=("zstd", "snappy", "gzip", "lz4", "brotli", NO_COMPRESSION),
    ),
    Option(
        "write_parquet",
        "dictionary",
        Kind.BOOL,
        "Dictionary-encode columns (smaller for repetitive values, slower to write).",
        faces={Face.SPARK: SAME, Face.DAGSTER: SAME},
        default=False,
    ),
    Option(
        "write_parquet",
        "row_group_rows",
        Kind.COUNT,
        "Rows per Parquet row group (the unit a ranged read fetches).",
        faces={Face.SPARK: SAME, Face.DAGSTER: SAME},
        default=1_000_000,
    ),
)

OPERATIONS: dict[str, dict[str, Option]] = {
    "put": PUT,
    "get": GET,
    "list": LIST,
    "version": VERSION,
    "follow": FOLLOW,
    "archive": ARCHIVE,
    "offload": OFFLOAD,
    "write_parquet": WRITE_PARQUET,
}


def options() -> Iterator[Option]:
    """Every row of every operation."""
    for rows in OPERATIONS.values():
        yield from rows.values()


def for_face(face: Face, operation: str) -> dict[str, Option]:
    """The options of ``operation`` that ``face`` takes, by core name."""
    return {name: o for name, o in OPERATIONS[operation].items() if o.takes(face)}


def resolve(
    face: Face, operation: str, given: Mapping[str, object], *, where: str = ""
) -> dict[str, Any]:
    """Every option of ``operation`` on ``face``: the parsed value given (under the core name)
    or the face's default. A value that does not parse fails naming the face's spelling."""
    resolved: dict[str, Any] = {}
    for name, option in for_face(face, operation).items():
        try:
            value = option.parse(given.get(name))
        except ValueError as exc:
            prefix = f"{where}: " if where else ""
            raise ValueError(f"{prefix}{option.spelled(face)}: {exc}") from None
        resolved[name] = option.default_for(face) if value is None else value
    return resolved


def reading(face: Face, given: Mapping[str, object], *, where: str = "") -> ReadOptions:
    """The ``get`` rows ``face`` takes, resolved as ``resolve`` does, as the core's read calls
    take them."""
    return ReadOptions(**resolve(face, "get", given, where=where))  # type: ignore[typeddict-item]


def render_default(value: Any) -> str:
    """A default as the docs show it: durations as 7d, unset as a dash."""
    if value is None:
        return "-"
    if isinstance(value, timedelta):
        from natsobj.parsing import format_duration

        return format_duration(value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def defaults_table(render: Callable[[Any], str] = render_default) -> str:
    """The Markdown table of every option's spelling and default on every face, as
    ``docs/options.md`` shows it (a test keeps the two equal)."""
    head = "| operation | option | values | " + " | ".join(f.value for f in ALL_FACES) + " |"
    lines = [head, "|" + "---|" * (3 + len(ALL_FACES))]
    notes: list[str] = []
    for option in options():
        cells = []
        for face in ALL_FACES:
            if not option.takes(face):
                cells.append("")
                continue
            cell = f"`{option.spelled(face)}` = {render(option.default_for(face))}"
            why = option.faces[face].why
            if why:
                notes.append(f"{option.operation}.{option.name} on {face.value}: {why}.")
                cell += f" [{len(notes)}]"
            cells.append(cell)
        lines.append(
            f"| {option.operation} | {option.name} | {option.describe()} | "
            + " | ".join(cells)
            + " |"
        )
    lines.append("")
    lines.extend(f"{n}. {note}" for n, note in enumerate(notes, 1))
    return "\n".join(lines) + "\n"
