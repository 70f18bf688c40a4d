"""``nats://`` for pyarrow: a pyarrow filesystem that takes the scheme-bearing paths pyarrow
takes for S3.

pyarrow resolves ``s3://`` URLs itself (``FileSystem.from_uri``), a table of schemes built
into its C++ library that a Python package cannot extend, so ``pq.read_table("nats://...")``
needs ``filesystem=``. An fsspec filesystem given there is wrapped in pyarrow's
``FSSpecHandler``, which hands paths through as given: a dataset directory named with its
scheme is listed as ``bucket/key`` names outside ``nats://bucket/key``, and pyarrow refuses
them (the same happens to s3fs). The handler here names every path as the filesystem does
(``natsobj.fs.strip_protocol``), so ``ds.dataset("nats://lake/sales", filesystem=...)``,
``pq.read_table``, ``pq.write_table`` and ``ds.write_dataset`` take ``nats://`` URLs and plain
``bucket/key`` paths alike; reads stay ranged reads of the fsspec filesystem below.
docs/data-stack.md maps each S3 call to its ``nats://`` form.
"""

from __future__ import annotations

from natsobj.extras import require_extra

require_extra("arrow", "natsobj.arrow")

from typing import Any

from pyarrow.fs import FSSpecHandler, PyFileSystem

from natsobj.fs import NatsObjectFileSystem, strip_protocol


class NatsArrowHandler(FSSpecHandler):
    """pyarrow's fsspec handler, with paths in the filesystem's own form."""

    def normalize_path(self, path: str) -> str:
        return strip_protocol(path)


def filesystem(fs: NatsObjectFileSystem | None = None, **storage_options: Any) -> PyFileSystem:
    """A pyarrow filesystem over ``fs``, or over a ``nats://`` filesystem made from
    ``storage_options`` (the fsspec options: ``servers``, ``user``, ...; none: ``NATS_*``)."""
    if fs is None:
        fs = NatsObjectFileSystem(**storage_options)
    elif storage_options:
        raise TypeError("give a filesystem or its storage options, not both")
    return PyFileSystem(NatsArrowHandler(fs))
