"""natsobj: the NATS JetStream Object Store for data pipelines.

``natsobj.connect`` is the blocking client; ``natsobj.aio.connect`` the async core under it.
"""

import importlib
from typing import TYPE_CHECKING, Any

from natsobj.cursors import ChangeCursor
from natsobj.errors import (
    BadBucketName,
    BadLifecycleRule,
    BadObjectMeta,
    BadObjectName,
    BucketExists,
    BucketNotFound,
    BucketRecreated,
    ChunkTooLarge,
    ClusterUnavailable,
    DigestMismatch,
    ExpiryNotEnabled,
    LinkError,
    MissingDigest,
    NatsObjError,
    NoRoom,
    NoServer,
    NotConnected,
    ObjectChanged,
    ObjectExists,
    ObjectLocked,
    ObjectNotFound,
    ObjectTooLarge,
    PermissionDenied,
    ProtocolViolation,
    StoreFull,
    StoreSealed,
    UnknownOption,
    UnsafeLocalPath,
    UnsafeLocalState,
    UntrustedArchiveLocation,
)
from natsobj.lifecycle import LifecycleRule
from natsobj.model import ObjectInfo, ObjectLink, StoreStatus
from natsobj.settings import ConnectionSettings
from natsobj.versioning import LockMode, ObjectVersion, Versioning, VersionLock

if TYPE_CHECKING:
    from natsobj.aio.put_modes import CREATE, OVERWRITE, PutMode
    from natsobj.sync import Client, ObjectStore, connect

__version__ = "0.2.0"

# Loaded on first use: importing the package for its settings table or its errors (Airflow's
# provider discovery, the connection form) then does not load nats-py and aiohttp.
_FROM_SYNC = ("Client", "ObjectStore", "connect")
_FROM_PUT_MODES = ("CREATE", "OVERWRITE", "PutMode")
_SUBMODULES = ("aio", "sync")


def __getattr__(name: str) -> Any:
    if name in _FROM_SYNC:
        return getattr(importlib.import_module("natsobj.sync"), name)
    if name in _FROM_PUT_MODES:
        return getattr(importlib.import_module("natsobj.aio.put_modes"), name)
    if name in _SUBMODULES:  # ``import natsobj`` then ``natsobj.aio.connect`` keeps working
        return importlib.import_module(f"natsobj.{name}")
    raise AttributeError(f"module 'natsobj' has no attribute {name!r}")


__all__ = [
    "CREATE",
    "OVERWRITE",
    "BadBucketName",
    "BadLifecycleRule",
    "BadObjectMeta",
    "BadObjectName",
    "BucketExists",
    "BucketNotFound",
    "BucketRecreated",
    "ChangeCursor",
    "ChunkTooLarge",
    "Client",
    "ClusterUnavailable",
    "ConnectionSettings",
    "DigestMismatch",
    "ExpiryNotEnabled",
    "LifecycleRule",
    "LinkError",
    "LockMode",
    "MissingDigest",
    "NatsObjError",
    "NoRoom",
    "NoServer",
    "NotConnected",
    "ObjectChanged",
    "ObjectExists",
    "ObjectInfo",
    "ObjectLink",
    "ObjectLocked",
    "ObjectNotFound",
    "ObjectStore",
    "ObjectTooLarge",
    "ObjectVersion",
    "PermissionDenied",
    "ProtocolViolation",
    "PutMode",
    "StoreFull",
    "StoreSealed",
    "StoreStatus",
    "UnknownOption",
    "UnsafeLocalPath",
    "UnsafeLocalState",
    "UntrustedArchiveLocation",
    "VersionLock",
    "Versioning",
    "connect",
]
