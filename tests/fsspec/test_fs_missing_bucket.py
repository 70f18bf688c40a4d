"""Issue 40: a write or read on ``nats://`` whose bucket does not exist says that the bucket is
missing and how to create it in the fsspec face's words. Before, pandas' ``to_parquet`` said
``no such object or prefix: nats://lake``, as if a key were missing, and nothing said how to
make the bucket (the core's hint, ``create_store(bucket)``, is another face's words)."""

from __future__ import annotations

import errno

import fsspec
import pandas as pd
import pytest

from natsobj.errors import BucketNotFound


@pytest.fixture
def fs(nats_url: str):
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def _says_how(error: FileNotFoundError, bucket: str) -> None:
    text = str(error)
    assert f"bucket {bucket!r} does not exist" in text, text
    assert f'fsspec.filesystem("nats").mkdir("{bucket}")' in text, text
    assert f"`natsobj store create {bucket}`" in text, text
    assert "create_store" not in text, text  # the Python API's words, not this face's
    assert error.errno == errno.ENOENT
    assert isinstance(error.__cause__, BucketNotFound)


def test_to_parquet_into_a_missing_bucket_says_the_bucket_is_missing(
    nats_url: str, bucket_name: str
) -> None:
    frame = pd.DataFrame({"n": [1, 2, 3]})
    with pytest.raises(FileNotFoundError) as raised:
        frame.to_parquet(
            f"nats://{bucket_name}/sales/day.parquet", storage_options={"servers": nats_url}
        )
    _says_how(raised.value, bucket_name)


def test_reads_and_listings_of_a_missing_bucket_say_so_too(fs, bucket_name: str) -> None:
    for call in (fs.cat, fs.ls, fs.info):
        with pytest.raises(FileNotFoundError) as raised:
            call(f"nats://{bucket_name}/x.csv")
        _says_how(raised.value, bucket_name)


def test_the_hint_works_as_said(fs, sync_client, bucket_name: str) -> None:
    fs.mkdir(bucket_name)  # what the error tells the user to do
    try:
        fs.pipe(f"{bucket_name}/x.csv", b"a,b\n")
        assert fs.cat(f"{bucket_name}/x.csv") == b"a,b\n"
    finally:
        sync_client.delete_store(bucket_name)
