"""The dataset manifest: the one object whose publication makes a write visible.

``<prefix>/_manifest.json`` lists the schema and every part. Readers plan from it only, so they
never see parts of an unfinished write. Each commit makes a new *generation*. Parts an overwrite
replaces are moved out of the dataset's folder to their ``retained_name``, listed there under
``retained``, and deleted by the first commit that is more than ``retain_generations``
generations newer, so a read planned on generation g can finish while up to
``retain_generations`` newer generations are committed, while every reader of the folder
(pandas, pyarrow, DuckDB, polars) sees the current generation's parts only.

With ``superseded_ttl`` the parts an overwrite replaces are instead given that TTL by the commit
(the server deletes them then, with no later commit needed) and stay listed under ``retained``
with their ``expires_at`` until then: a read planned on generation g can finish for that long
however many generations are committed meanwhile, which matters for a streaming sink in
complete mode that commits every few seconds. The first commit after ``expires_at`` deletes
whatever of them is still there (one that could not be given its TTL).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from natsobj.spark.errors import SchemaMismatch
from natsobj.spark.partition_values import is_hidden

MANIFEST = "_manifest.json"
ABORTED = "_aborted"
FORMAT = "natsobj-spark-dataset"
VERSION = 1
WRITE_ID_KEY = "natsobj-spark-write-id"
# Where superseded parts wait for the readers planned on them: at the bucket's root, in a
# hidden folder, the part's own name after it. Not beside the dataset (``sales/daily.old/``),
# which a reader of ``sales/`` would take for data, nor in a hidden folder there
# (``sales/.daily/``), which not every glob skips: only a reader of the whole bucket can meet
# it, and Spark's and pyarrow's folder discovery skip ``_`` folders even there.
# The name alone gives the retained name, so a reader pinned on any older generation finds
# its part without a manifest, and a commit knows a part a crashed commit left in the folder.
RETAINED_AREA = "_natsobj/retained/"


def manifest_name(prefix: str) -> str:
    return f"{prefix}/{MANIFEST}"


def abort_marker(prefix: str, write_id: str) -> str:
    """Published by ``abort`` before it sweeps; a task that stores a part after the sweep
    sees it and deletes its own parts, so no part outlives an aborted write."""
    return f"{prefix}/{ABORTED}/{write_id}"


def part_name(prefix: str, partition: int, attempt: int, folder: str = "") -> str:
    """A new part's name; ``folder`` is its partition's ``col=value/...`` (partitioned)."""
    under = f"{prefix}/{folder}" if folder else prefix
    return f"{under}/part-{partition:05d}-{attempt}-{uuid.uuid4().hex}.parquet"


def retained_name(name: str) -> str:
    """Where a part an overwrite supersedes is kept (``RETAINED_AREA``)."""
    return RETAINED_AREA + name


def superseded_name(name: str) -> str:
    """The name in its dataset's folder of a part at its ``retained_name`` (else "")."""
    return name.removeprefix(RETAINED_AREA) if name.startswith(RETAINED_AREA) else ""


def is_own_object(prefix: str, name: str) -> bool:
    """One of the dataset's data objects, in its folder or at its ``retained_name``: the only
    names a commit moves, deletes or gives a TTL (a manifest is any bucket writer's to edit)."""
    return is_data_object(prefix, superseded_name(name) or name)


def is_data_object(prefix: str, name: str) -> bool:
    """Parquet objects under ``prefix`` that Spark lists (``is_listed``)."""
    return name.endswith(".parquet") and is_listed(prefix, name)


def is_listed(prefix: str, name: str) -> bool:
    """Objects under ``prefix`` that are not hidden (``.*``, and ``_*`` unless a
    ``_col=value`` partition folder), as Spark lists files."""
    if not name.startswith(prefix + "/" if prefix else ""):
        return False
    return not any(is_hidden(seg) for seg in name[len(prefix) :].split("/") if seg)


@dataclass(frozen=True)
class Part:
    name: str
    rows: int
    size: int
    digest: str
    # column -> [min, max, null_count] from the Parquet footer; lets a filtered read skip
    # the part (natsobj.spark.pushdown). Absent in manifests of older writers.
    stats: dict[str, list[Any]] | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, Any]:
        doc = {"name": self.name, "rows": self.rows, "size": self.size, "digest": self.digest}
        if self.stats:
            doc["stats"] = self.stats
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Part:
        stats = doc.get("stats")
        return cls(
            str(doc["name"]),
            int(doc["rows"]),
            int(doc["size"]),
            str(doc["digest"]),
            dict(stats) if isinstance(stats, dict) else None,
        )


@dataclass(frozen=True)
class Retained:
    """Parts of a superseded generation, kept so readers planned on it can finish.
    ``expires_at`` (ISO time, or empty): the server deletes them then (``superseded_ttl``)."""

    generation: int
    superseded_at: str
    parts: tuple[str, ...]
    expires_at: str = ""

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "generation": self.generation,
            "superseded_at": self.superseded_at,
            "parts": list(self.parts),
        }
        if self.expires_at:
            doc["expires_at"] = self.expires_at
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Retained:
        return cls(
            int(doc["generation"]),
            str(doc["superseded_at"]),
            tuple(doc["parts"]),
            str(doc.get("expires_at") or ""),
        )

    def moved_out(self, prefix: str) -> Retained:
        """The entry with each of ``prefix``'s data objects at its ``retained_name`` (a
        manifest of an older writer lists them in the folder); other names stay as listed."""
        return replace(self, parts=tuple(_retired(prefix, n) for n in self.parts))

    def kept_at(self, generation: int, retain: int, now: datetime) -> bool:
        """Still listed in ``generation``'s manifest: until it expires when it expires by
        TTL, else while at most ``retain`` newer generations were committed."""
        if self.expires_at:
            return now < datetime.fromisoformat(self.expires_at)
        return generation - self.generation <= retain


@dataclass(frozen=True)
class Manifest:
    prefix: str
    schema: dict[str, Any]  # Spark StructType.jsonValue(): exact types and nullability
    parts: tuple[Part, ...]
    generation: int = 1
    write_id: str = ""
    mode: str = "overwrite"
    committed_at: str = ""
    retained: tuple[Retained, ...] = field(default_factory=tuple)
    # Streaming sinks: query id -> last micro-batch id committed, so a replayed batch is skipped.
    streams: dict[str, int] = field(default_factory=dict)
    # Hive-style partition columns (the last fields of ``schema``): each part sits under
    # ``<prefix>/<col>=<value>/`` and holds the other columns only.
    partition_columns: tuple[str, ...] = ()

    def in_folder(self) -> set[str]:
        """Names in the folder of the retained parts: where a commit moves them from after
        publishing, so where a commit that died meanwhile (or an older writer) left some."""
        return {superseded_name(n) or n for r in self.retained for n in r.parts}

    def committed_batch(self, query_id: str) -> int:
        """The last micro-batch of ``query_id`` in this dataset (-1 for none)."""
        return self.streams.get(query_id, -1)

    @property
    def num_rows(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def num_bytes(self) -> int:
        return sum(p.size for p in self.parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "prefix": self.prefix,
            "generation": self.generation,
            "write_id": self.write_id,
            "mode": self.mode,
            "committed_at": self.committed_at,
            "schema": self.schema,
            "num_rows": self.num_rows,
            "num_bytes": self.num_bytes,
            "num_parts": len(self.parts),
            "parts": [p.as_dict() for p in self.parts],
            "retained": [r.as_dict() for r in self.retained],
            "streams": dict(self.streams),
            "partition_columns": list(self.partition_columns),
        }

    def to_json(self) -> bytes:
        return json.dumps(self.as_dict(), indent=1).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, *, bucket: str, name: str) -> Manifest:
        from natsobj.errors import BadObjectMeta

        try:
            doc = json.loads(data)
            if doc.get("format") != FORMAT or int(doc.get("version", 0)) > VERSION:
                raise ValueError(f"format {doc.get('format')!r} v{doc.get('version')}")
            return cls(
                prefix=str(doc["prefix"]),
                schema=dict(doc["schema"]),
                parts=tuple(Part.from_dict(p) for p in doc["parts"]),
                generation=int(doc["generation"]),
                write_id=str(doc.get("write_id", "")),
                mode=str(doc.get("mode", "overwrite")),
                committed_at=str(doc.get("committed_at", "")),
                retained=tuple(Retained.from_dict(r) for r in doc.get("retained", [])),
                streams={str(k): int(v) for k, v in (doc.get("streams") or {}).items()},
                partition_columns=tuple(str(c) for c in doc.get("partition_columns") or ()),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise BadObjectMeta(
                f"not a natsobj Spark manifest ({exc})",
                bucket=bucket,
                name=name,
                hint="Delete or rewrite the object, or overwrite the dataset.",
            ) from None


def next_generation(
    previous: Manifest | None,
    *,
    prefix: str,
    schema: dict[str, Any],
    parts: list[Part],
    overwrite: bool,
    write_id: str,
    retain: int,
    stream: tuple[str, int] | None = None,
    superseded_ttl: timedelta | None = None,
    partition_columns: tuple[str, ...] = (),
) -> tuple[Manifest, list[str]]:
    """The manifest a commit publishes, and the part names to delete once it is published.
    The parts it supersedes are listed at their ``retained_name``: the commit moves them there.
    ``stream`` is the (query id, batch id) a streaming sink commits, recorded for replays.
    An append keeps the dataset's ``partition_columns``; an overwrite may change them.
    With ``superseded_ttl`` the generation an overwrite supersedes is listed with its
    ``expires_at`` (the commit gives its parts that TTL: ``expiring``) and kept until then."""
    moment = datetime.now(UTC)
    now = moment.isoformat()
    streams = dict(previous.streams) if previous is not None else {}
    if stream is not None:
        streams[stream[0]] = stream[1]
    if previous is None:
        first = Manifest(
            prefix,
            schema,
            tuple(parts),
            1,
            write_id,
            _mode(overwrite),
            now,
            (),
            streams,
            partition_columns,
        )
        return first, []
    earlier = tuple(r.moved_out(prefix) for r in previous.retained)
    if overwrite:
        current = tuple(parts)
        expires_at = (moment + superseded_ttl).isoformat() if superseded_ttl else ""
        superseded = Retained(
            previous.generation, now, tuple(p.name for p in previous.parts), expires_at
        )
        history = (superseded.moved_out(prefix), *earlier)
    else:
        if previous.partition_columns != partition_columns:
            raise SchemaMismatch(
                f"cannot append to {prefix!r}: the dataset is partitioned by "
                f"{list(previous.partition_columns)}, the write by {list(partition_columns)}"
            )
        schema = merge_schemas(previous.schema, schema, where=prefix)
        current = (*previous.parts, *parts)
        history = earlier
    generation = previous.generation + 1
    # A reader planned on generation g can finish while at most `retain` newer ones commit
    # (or, for parts that expire by TTL, until they expire: the server deletes those, and
    # deleting them again is harmless and catches a part that could not be given its TTL).
    kept = tuple(r for r in history if r.kept_at(generation, retain, moment))
    dropped = [r for r in history if not r.kept_at(generation, retain, moment)]
    live = {p.name for p in current} | {n for r in kept for n in r.parts}
    doomed = sorted({n for r in dropped for n in r.parts} - live)
    manifest = Manifest(
        prefix,
        schema,
        current,
        generation,
        write_id,
        _mode(overwrite),
        now,
        kept,
        streams,
        partition_columns,
    )
    return manifest, doomed


def expiring(manifest: Manifest) -> tuple[str, ...]:
    """The parts ``manifest``'s own commit superseded to expire by TTL (superseded_ttl): the
    commit gives them their TTL once the manifest is published."""
    if manifest.mode != "overwrite" or not manifest.retained:
        return ()
    newest = manifest.retained[0]
    if not newest.expires_at or newest.generation != manifest.generation - 1:
        return ()
    return newest.parts


def merge_schemas(old: dict[str, Any], new: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Append keeps the dataset's schema; a column becomes nullable if either side allows null."""
    old_fields, new_fields = old.get("fields", []), new.get("fields", [])
    if [_shape(f) for f in old_fields] != [_shape(f) for f in new_fields]:
        raise SchemaMismatch(
            f"cannot append to {where!r}: dataset has columns "
            f"{_describe(old_fields)}, the DataFrame has {_describe(new_fields)}"
        )
    merged = [_or_nullability(o, n) for o, n in zip(old_fields, new_fields, strict=True)]
    return {**old, "fields": merged}


_NULLABILITY = ("nullable", "containsNull", "valueContainsNull")


def _or_nullability(old: Any, new: Any) -> Any:
    """Same shape as ``old``, nullable wherever either side is (at every nesting level)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {
            k: bool(v or new.get(k, True))
            if k in _NULLABILITY
            else v
            if k == "metadata"
            else _or_nullability(v, new.get(k))
            for k, v in old.items()
        }
    if isinstance(old, list) and isinstance(new, list):
        return [_or_nullability(o, n) for o, n in zip(old, new, strict=False)]
    return old


def _shape(spark_field: dict[str, Any]) -> tuple[str, str]:
    return spark_field["name"], json.dumps(_strip_nullability(spark_field["type"]), sort_keys=True)


def _strip_nullability(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_nullability(v)
            for k, v in value.items()
            if k not in (*_NULLABILITY, "metadata")
        }
    if isinstance(value, list):
        return [_strip_nullability(v) for v in value]
    return value


def _describe(spark_fields: list[dict[str, Any]]) -> str:
    return ", ".join(f"{f['name']} {_type_name(f['type'])}" for f in spark_fields) or "(none)"


def _type_name(spark_type: Any) -> str:
    return spark_type if isinstance(spark_type, str) else str(spark_type.get("type", spark_type))


def _retired(prefix: str, name: str) -> str:
    return retained_name(name) if is_data_object(prefix, name) else name


def _mode(overwrite: bool) -> str:
    return "overwrite" if overwrite else "append"
