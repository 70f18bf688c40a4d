"""``nats://bucket/name`` asset URIs: one spelling for lineage, outlets and asset watchers.

The connection id that ObjectStoragePath allows in the URL (``nats://conn@bucket/...``) says
how to reach the data, not what the data is, so it is dropped from asset URIs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult

from natsobj.errors import BadBucketName
from natsobj.names import check_bucket
from natsobj.orchestration.lineage import dataset_identity
from natsobj.paths import is_nats_url, nats_url, parse_nats_url

if TYPE_CHECKING:
    from airflow.sdk import Asset


def asset_uri(bucket: str, name: str = "") -> str:
    return nats_url(bucket, name)


def split_asset_uri(uri: str) -> tuple[str, str]:
    """(bucket, object name or prefix) of a ``nats://`` URI."""
    if not is_nats_url(uri):
        raise ValueError(f"{uri!r} is not a nats:// URI")
    parsed = parse_nats_url(uri)
    return parsed.bucket, parsed.key


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow hands the URI already split; its netloc is ``[conn_id@]bucket``."""
    bucket = parse_nats_url(uri.netloc).bucket
    if not bucket:
        raise ValueError("a nats:// asset URI needs a bucket: nats://<bucket>/<object or prefix>")
    try:
        check_bucket(bucket)
    except BadBucketName as exc:
        raise ValueError(str(exc)) from exc
    return uri._replace(netloc=bucket)


def create_asset(*, bucket: str, name: str = "", extra: dict[str, Any] | None = None) -> Asset:
    from airflow.sdk import Asset

    return Asset(uri=asset_uri(bucket, name), extra=extra)


def convert_asset_to_openlineage(asset: Asset, lineage_context: Any) -> Any:
    """The asset's OpenLineage dataset: the object's identity
    (``natsobj.orchestration.lineage``)."""
    from airflow.providers.common.compat.openlineage.facet import Dataset

    namespace, name = dataset_identity(*split_asset_uri(asset.uri))
    return Dataset(namespace=namespace, name=name)
