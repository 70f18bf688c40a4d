"""Reading an offloaded object: the seam between the core and the archive.

An offloaded object's bytes live in an S3 archive, which the core knows nothing about: the
archive registers how to read them (``register_offloaded_reader``) when it is imported. A
process that never meets an offloaded record never imports the archive; one that does, and
has not imported it yet, gets it loaded here by module name (``PLUGINS``), so ``get`` works
the same whether or not the caller imported ``natsobj.archive`` first.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator
from typing import Protocol

from natsobj.aio.stream import BucketStream
from natsobj.errors import NatsObjError
from natsobj.model import ObjectInfo

# Modules that register an offloaded reader when imported, tried in order.
PLUGINS = ("natsobj.archive.readthrough",)


class OffloadedReaderFactory(Protocol):
    def __call__(self, stream: BucketStream, info: ObjectInfo) -> AsyncGenerator[bytes]:
        """The object's bytes, verified against ``info``'s size and digest as they come."""
        ...


_registered: list[OffloadedReaderFactory] = []


def register_offloaded_reader(factory: OffloadedReaderFactory) -> None:
    """Make ``factory`` the reader of offloaded objects (the archive calls this on import)."""
    _registered[:] = [factory]


def offloaded_reader() -> OffloadedReaderFactory | None:
    """The registered factory, loading the plugin modules if none is registered yet; None
    when none can be loaded (the ``archive`` extra is not installed)."""
    for module in PLUGINS:
        if _registered:
            break
        try:
            importlib.import_module(module)
        except ImportError:
            continue
    return _registered[0] if _registered else None


def read_offloaded(stream: BucketStream, info: ObjectInfo) -> AsyncGenerator[bytes]:
    factory = offloaded_reader()
    if factory is None:
        raise NatsObjError(
            "the object is offloaded to an S3 archive, and this process cannot read from one",
            bucket=info.bucket,
            name=info.name,
            hint="Install the archive extra: pip install 'natsobj[archive]'.",
        )
    return factory(stream, info)
