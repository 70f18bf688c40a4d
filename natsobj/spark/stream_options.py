"""Options of ``readStream.format("natsobj")`` and ``writeStream.format("natsobj")``.

The streaming keys are taken out first; everything else (connection, bucket, path, layout,
glob, write tuning) goes through the batch parser, so both faces accept the same names and a
misspelt option fails the same way before the query starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from natsobj.changefeed import OnRecreated
from natsobj.matching import NameMatcher
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.options import TABLE, SourceOptions, count_option, table_keys, table_options

# Spark passes these to every streaming source and sink; they are Spark's, not ours.
SPARK_STREAM_KEYS = frozenset({"checkpointlocation", "queryname"})
# The change feed's options (natsobj.operation_options: startingSequence, includeDeletes,
# onRecreated) and the source's own (objectFormat and the CSV/JSON/text options are the batch
# reader's: natsobj.spark.file_options).
STREAM_KEYS = table_keys("follow") | {"maxobjectspertrigger", "maxbytespertrigger"}


@dataclass(frozen=True)
class StreamOptions:
    """What the streaming source needs besides the batch options."""

    source: SourceOptions
    matcher: NameMatcher | None
    # Where a new query starts: a position of the follow.start row (earliest, current,
    # latest) or the first meta sequence to read.
    starting: str | int
    include_deletes: bool
    # A checkpoint of a bucket deleted and created again since: fail, or restart from the
    # new bucket's beginning.
    on_recreated: OnRecreated
    max_objects: int | None = None
    max_bytes: int | None = None

    @property
    def bucket(self) -> str:
        return self.source.bucket

    def selects(self, name: str) -> bool:
        """Whether an object belongs to the stream: under the path, and matching the glob."""
        prefix = self.source.prefix
        if prefix and not name.startswith(prefix + "/"):
            return False
        return self.matcher is None or self.matcher.matches(name)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, header_default: bool = True) -> StreamOptions:
        """``header_default``: a streamed CSV object has a header line unless option header
        says (as this source has always read them); ``schema()``, which serves batch reads
        too, passes Spark's batch default instead."""
        lowered = {str(k).lower(): v for k, v in options.items() if v is not None}
        stream = {k: str(lowered.pop(k)) for k in STREAM_KEYS & set(lowered)}
        glob = lowered.get("glob") or None
        source = source_options(lowered, header_default=header_default)
        where = source.bucket
        follow = table_options(stream, "follow", where)
        if source.layout != TABLE and "objectformat" in lowered:
            raise BadSparkOption("option objectFormat applies to table mode only", bucket=where)
        if source.layout == TABLE and follow["include_deletes"]:
            raise BadSparkOption(
                "includeDeletes needs binary mode: a deleted object has no rows in a table",
                bucket=where,
                hint='Use .option("layout", "binary") to see deletes as rows with null content.',
            )
        return cls(
            source=source,
            matcher=_matcher(glob, where),
            starting=follow["start"],
            include_deletes=follow["include_deletes"],
            on_recreated=cast(OnRecreated, follow["on_recreated"]),
            max_objects=_limit(stream, "maxobjectspertrigger", where),
            max_bytes=_limit(stream, "maxbytespertrigger", where),
        )


def source_options(options: Mapping[str, str], *, header_default: bool = False) -> SourceOptions:
    """The batch options of a streaming source or sink, without Spark's own stream keys."""
    return SourceOptions.parse(
        {k: v for k, v in options.items() if k.lower() not in SPARK_STREAM_KEYS},
        header_default=header_default,
    )


def _matcher(glob: str | None, bucket: str) -> NameMatcher | None:
    if not glob:
        return None
    try:
        return NameMatcher(glob, "glob")
    except ValueError as exc:
        raise BadSparkOption(f"option glob: {exc}", bucket=bucket) from None


def _limit(values: Mapping[str, str], key: str, bucket: str) -> int | None:
    return count_option(values, key, bucket) if key in values else None
