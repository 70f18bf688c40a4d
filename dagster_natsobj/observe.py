"""Source assets for objects that other systems write, versioned by their digest.

The data version is the object's SHA-256 digest, so a re-upload of identical bytes changes
nothing downstream while any change of content makes downstream assets stale.
"""

from __future__ import annotations

import warnings
from typing import Any

from dagster import (
    AssetKey,
    BetaWarning,
    DataVersion,
    MetadataValue,
    ObserveResult,
    SourceAsset,
    observable_source_asset,
)

from dagster_natsobj.naming import BUCKET_METADATA_KEY, OBJECT_METADATA_KEY
from natsobj.errors import ObjectNotFound

MISSING_VERSION = "missing"


def make_nats_object_observable(
    key: str | list[str] | AssetKey,
    bucket: str,
    object_name: str,
    *,
    resource_key: str = "nats",
    io_manager_key: str = "io_manager",
    description: str | None = None,
    group_name: str | None = None,
) -> SourceAsset:
    """An observable source asset for ``object_name`` in ``bucket``.

    Downstream assets load it through the ``NatsObjectStoreIOManager`` (it reads the pinned
    bucket and object from this asset's metadata); a missing or deleted object observes as
    data version ``"missing"``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)

        @observable_source_asset(
            key=AssetKey.from_coercible(key),
            description=description or f"nats://{bucket}/{object_name}, written outside Dagster",
            group_name=group_name,
            io_manager_key=io_manager_key,
            required_resource_keys={resource_key},
            metadata={BUCKET_METADATA_KEY: bucket, OBJECT_METADATA_KEY: object_name},
        )
        def _observe(context: Any) -> ObserveResult:
            resource = getattr(context.resources, resource_key)
            with resource.get_store(bucket) as store:
                try:
                    info = store.get_info(object_name)
                except ObjectNotFound:
                    info = None
            uri = MetadataValue.text(f"nats://{bucket}/{object_name}")
            if info is None or info.deleted:
                return ObserveResult(
                    data_version=DataVersion(MISSING_VERSION),
                    metadata={"dagster/uri": uri, "exists": False},
                )
            metadata: dict[str, Any] = {
                "dagster/uri": uri,
                "exists": True,
                "size": info.size,
                "digest": info.digest,
                "nuid": info.nuid,
                "sequence": int(info.sequence or 0),
            }
            if info.mtime is not None:
                metadata["mtime"] = MetadataValue.timestamp(info.mtime)
            return ObserveResult(data_version=DataVersion(info.digest), metadata=metadata)

    return _observe
