"""Source assets for objects that other systems write, versioned by their digest.

The data version is the object's SHA-256 digest, so a re-upload of identical bytes changes
nothing downstream while any change of content makes downstream assets stale.
"""

from __future__ import annotations

import warnings
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DataVersion,
    MetadataValue,
    ObserveResult,
    multi_observable_source_asset,
)

from dagster_natsobj.naming import BUCKET_METADATA_KEY, OBJECT_METADATA_KEY
from natsobj.deprecation import warn_deprecated
from natsobj.errors import ObjectNotFound

MISSING_VERSION = "missing"


def nats_object_observable_asset(
    spec: AssetSpec | str | list[str] | AssetKey,
    bucket: str,
    object_name: str,
    *,
    resource_key: str = "nats",
    io_manager_key: str = "io_manager",
) -> AssetsDefinition:
    """An external asset for ``object_name`` in ``bucket``, observed by its digest.

    ``spec`` is the asset's ``AssetSpec`` (or just its key), as Dagster's external-asset API
    takes it: description, group, owners and tags come from it. Downstream assets load the
    object through the ``NatsObjectStoreIOManager`` (it reads the pinned bucket and object from
    the spec's metadata); a missing or deleted object observes as data version ``"missing"``.
    """
    if not isinstance(spec, AssetSpec):
        spec = AssetSpec(key=AssetKey.from_coercible(spec))
    pinned = spec.replace_attributes(
        metadata={**spec.metadata, BUCKET_METADATA_KEY: bucket, OBJECT_METADATA_KEY: object_name},
        description=spec.description or f"nats://{bucket}/{object_name}, written outside Dagster",
    ).with_io_manager_key(io_manager_key)

    with warnings.catch_warnings():  # Dagster marks the decorator beta; it is its documented way
        warnings.simplefilter("ignore", BetaWarning)
        observe = multi_observable_source_asset(
            specs=[pinned],
            name=f"observe_{pinned.key.to_python_identifier()}",
            required_resource_keys={resource_key},
        )

    @observe
    def _observe(context) -> ObserveResult:  # type: ignore[no-untyped-def]  # Dagster rejects a string annotation
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


def make_nats_object_observable(
    key: str | list[str] | AssetKey,
    bucket: str,
    object_name: str,
    *,
    resource_key: str = "nats",
    io_manager_key: str = "io_manager",
    description: str | None = None,
    group_name: str | None = None,
) -> AssetsDefinition:
    """Deprecated: use ``nats_object_observable_asset(AssetSpec(key, ...), bucket, name)``.

    It used to return a ``SourceAsset`` (deprecated by Dagster); it now returns the same
    external asset as its replacement, which ``Definitions`` and ``observe`` take alike."""
    warn_deprecated("make_nats_object_observable()", "nats_object_observable_asset(AssetSpec)")
    spec = AssetSpec(
        key=AssetKey.from_coercible(key), description=description, group_name=group_name
    )
    return nats_object_observable_asset(
        spec, bucket, object_name, resource_key=resource_key, io_manager_key=io_manager_key
    )
