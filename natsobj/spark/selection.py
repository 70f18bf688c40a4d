"""Which objects a table read without a manifest reads: what Spark's file sources read from a
folder (every object that is not hidden), narrowed by option glob, in one format.

With objectFormat ``auto`` the extension says the format: Parquet objects when there are any
(what this source has always read from a folder of foreign Parquet), otherwise the objects of
the one other format found; several formats and no objectFormat is refused rather than
guessed.
"""

from __future__ import annotations

from collections.abc import Iterable

from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.file_options import AUTO, PARQUET, format_of
from natsobj.spark.manifest import is_listed
from natsobj.spark.options import SourceOptions


def select_listed(infos: Iterable[ObjectInfo], opts: SourceOptions) -> list[ObjectInfo]:
    """The objects of a listing under ``opts.prefix`` a table read takes, in name order."""
    matcher = NameMatcher(opts.glob, "glob") if opts.glob else None
    taken = [
        info
        for info in infos
        if is_listed(opts.prefix, info.name)
        and (matcher is None or matcher.matches(info.name))
        and format_of(info.name, opts.object_format) is not None
    ]
    if opts.object_format != AUTO:
        return taken
    formats = {format_of(info.name, AUTO) for info in taken}
    if len(formats) > 1 and PARQUET not in formats:
        raise BadSparkOption(
            f"prefix {opts.prefix!r} holds objects of several formats "
            f"({', '.join(sorted(str(f) for f in formats))})",
            bucket=opts.bucket,
            hint='Choose one with .option("objectFormat", ...), or narrow the read with a glob.',
        )
    chosen = PARQUET if PARQUET in formats else next(iter(formats), None)
    return [info for info in taken if format_of(info.name, AUTO) == chosen]
