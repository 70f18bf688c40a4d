"""The same names in a NATS bucket and in an S3 bucket on moto's server, for the tests that
hold ``NatsObjectStoreHook``'s S3 twins to what the Amazon provider's ``S3Hook`` answers."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator

from tests.archive.conftest import create_s3_bucket, s3_client


def nats_bucket_holding(
    url: str, names: Iterable[str], deleted: Iterable[str] = ()
) -> Iterator[str]:
    """A fresh bucket holding each name (its own name as its bytes) and a delete marker for
    each of ``deleted``; removed afterwards. Written as a generator for a fixture."""
    import natsobj

    bucket = f"t{uuid.uuid4().hex[:12]}"
    with natsobj.connect(url) as client:
        store = client.create_store(bucket)
        for name in names:
            store.put(name, name.encode())
        for name in deleted:
            store.put(name, b"deleted")
            store.delete(name)
    yield bucket
    with natsobj.connect(url) as client:
        client.delete_store(bucket)


def s3_bucket_holding(endpoint: str, keys: Iterable[str]) -> str:
    """A fresh S3 bucket on ``endpoint`` holding each key (its own name as its bytes)."""
    bucket = create_s3_bucket(endpoint)
    client = s3_client(endpoint)
    for key in keys:
        client.put_object(Bucket=bucket, Key=key, Body=key.encode())
    return bucket
