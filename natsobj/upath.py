"""``nats://bucket/key`` as a universal_pathlib ``UPath``, with S3Path's path semantics.

universal_pathlib finds this class through the ``universal_pathlib.implementations`` entry
point. Without it, ``UPath("nats://...")`` falls back to a generic class that warns on every
path and treats the bucket as an ordinary first part, so ``drive``, ``anchor``, ``parts`` and
the parent of a bucket differ from the same path on ``s3://``. Buckets are the anchor here as
they are on S3, which is what code written against S3Path expects.
"""

from __future__ import annotations

from typing import Any

import fsspec
from upath._flavour import WrappedFileSystemFlavour
from upath.implementations.cloud import CloudPath

from natsobj.fs import NatsObjectFileSystem

# universal_pathlib looks the protocol up in fsspec's registry of imported classes for the
# module-level helpers it calls before any path exists (URL keyword arguments); put it there.
fsspec.get_filesystem_class(NatsObjectFileSystem.protocol)

# What universal_pathlib's protocol table gives s3:// (netloc_is_anchor, supports_empty_parts),
# for the one filesystem that serves nats://.
_NATS_FLAVOUR = WrappedFileSystemFlavour(
    NatsObjectFileSystem, netloc_is_anchor=True, supports_empty_parts=True
)


class NatsPath(CloudPath):
    """A path in a NATS object store bucket: ``nats://bucket/key``."""

    __slots__ = ()
    parser = _NATS_FLAVOUR

    def __init__(self, *args: Any, protocol: str | None = None, **storage_options: Any) -> None:
        super().__init__(*args, protocol=protocol, **storage_options)
        if not self.drive and len(self.parts) > 1:
            raise ValueError(f"{self} names no bucket: write nats://bucket/key")
