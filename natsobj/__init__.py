"""natsobj: the NATS JetStream Object Store for data pipelines.

``natsobj.connect`` is the blocking client; ``natsobj.aio.connect`` the async core under it.
"""

from natsobj.errors import (
    BadBucketName,
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
    NotConnected,
    ObjectChanged,
    ObjectExists,
    ObjectNotFound,
    ObjectTooLarge,
    PermissionDenied,
    StoreFull,
    StoreSealed,
    UnsafeLocalState,
    UntrustedArchiveLocation,
    UntrustedPickle,
)
from natsobj.lifecycle import LifecycleRule
from natsobj.model import ChangeCursor, ObjectInfo, ObjectLink, StoreStatus
from natsobj.settings import ConnectionSettings
from natsobj.sync import Client, ObjectStore, connect

__version__ = "0.2.0"

__all__ = [
    "BadBucketName",
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
    "MissingDigest",
    "NatsObjError",
    "NotConnected",
    "ObjectChanged",
    "ObjectExists",
    "ObjectInfo",
    "ObjectLink",
    "ObjectNotFound",
    "ObjectStore",
    "ObjectTooLarge",
    "PermissionDenied",
    "StoreFull",
    "StoreSealed",
    "StoreStatus",
    "UnsafeLocalState",
    "UntrustedArchiveLocation",
    "UntrustedPickle",
    "connect",
]
