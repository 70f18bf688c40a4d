"""Bucket versioning through the S3 gateway, with boto3 and the AWS CLI as they come:
Put/GetBucketVersioning, ListObjectVersions paging, ``versionId`` on GET, HEAD, DELETE and
DeleteObjects, and the ``x-amz-version-id`` / ``x-amz-delete-marker`` headers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.gateway.test_clients import _aws


@pytest.fixture
def versioned(s3) -> Iterator[str]:
    bucket = "v" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    yield bucket
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket=bucket, Key=entry["Key"], VersionId=entry["VersionId"])
    s3.delete_bucket(Bucket=bucket)


def test_versioning_status_follows_put_bucket_versioning(s3, versioned) -> None:
    assert s3.get_bucket_versioning(Bucket=versioned)["Status"] == "Enabled"
    s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=versioned)["Status"] == "Suspended"
    with pytest.raises(ClientError) as caught:
        s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Off"})
    assert caught.value.response["Error"]["Code"] == "MalformedXML"


def test_every_version_is_listed_read_and_headed_by_its_id(s3, versioned) -> None:
    ids = [
        s3.put_object(Bucket=versioned, Key="k", Body=body)["VersionId"]
        for body in (b"one", b"two", b"three")
    ]
    assert len(set(ids)) == 3
    listed = s3.list_object_versions(Bucket=versioned)["Versions"]
    assert [(v["VersionId"], v["IsLatest"], v["Size"]) for v in listed] == [
        (ids[2], True, 5),
        (ids[1], False, 3),
        (ids[0], False, 3),
    ]
    for version_id, body in zip(ids, (b"one", b"two", b"three"), strict=True):
        got = s3.get_object(Bucket=versioned, Key="k", VersionId=version_id)
        assert got["Body"].read() == body
        assert got["VersionId"] == version_id
        head = s3.head_object(Bucket=versioned, Key="k", VersionId=version_id)
        assert head["ContentLength"] == len(body) and head["VersionId"] == version_id
    ranged = s3.get_object(Bucket=versioned, Key="k", VersionId=ids[2], Range="bytes=1-2")
    assert ranged["Body"].read() == b"hr"
    assert s3.get_object(Bucket=versioned, Key="k")["Body"].read() == b"three"
    with pytest.raises(ClientError) as caught:
        s3.get_object(Bucket=versioned, Key="k", VersionId="A" * 22)
    assert caught.value.response["Error"]["Code"] == "NoSuchVersion"


def test_a_delete_leaves_a_marker_and_removing_it_restores_the_object(s3, versioned) -> None:
    put = s3.put_object(Bucket=versioned, Key="doc", Body=b"kept")
    deleted = s3.delete_object(Bucket=versioned, Key="doc")
    assert deleted["DeleteMarker"] is True
    marker = deleted["VersionId"]
    with pytest.raises(ClientError) as caught:
        s3.get_object(Bucket=versioned, Key="doc")
    assert caught.value.response["Error"]["Code"] == "NoSuchKey"
    listing = s3.list_object_versions(Bucket=versioned)
    assert [(m["VersionId"], m["IsLatest"]) for m in listing["DeleteMarkers"]] == [(marker, True)]
    assert [(v["VersionId"], v["IsLatest"]) for v in listing["Versions"]] == [
        (put["VersionId"], False)
    ]
    s3.delete_object(Bucket=versioned, Key="doc", VersionId=marker)  # S3's undelete
    assert s3.get_object(Bucket=versioned, Key="doc")["Body"].read() == b"kept"


def test_delete_objects_removes_the_named_versions(s3, versioned) -> None:
    first = s3.put_object(Bucket=versioned, Key="a", Body=b"1")["VersionId"]
    second = s3.put_object(Bucket=versioned, Key="a", Body=b"2")["VersionId"]
    answer = s3.delete_objects(
        Bucket=versioned, Delete={"Objects": [{"Key": "a", "VersionId": first}]}
    )
    assert answer["Deleted"] == [{"Key": "a", "VersionId": first}]
    listed = s3.list_object_versions(Bucket=versioned)["Versions"]
    assert [v["VersionId"] for v in listed] == [second]


def test_list_object_versions_pages_by_key_and_version_markers(s3, versioned) -> None:
    expected = []
    for key in ("a", "b/x", "b/y", "c"):
        for body in (b"1", b"22"):
            expected.append((key, s3.put_object(Bucket=versioned, Key=key, Body=body)["VersionId"]))
    # newest first within a key
    expected = [
        entry for key in ("a", "b/x", "b/y", "c") for entry in expected[::-1] if entry[0] == key
    ]
    seen = [
        (v["Key"], v["VersionId"])
        for page in s3.get_paginator("list_object_versions").paginate(
            Bucket=versioned, PaginationConfig={"PageSize": 3}
        )
        for v in page.get("Versions", [])
    ]
    assert seen == expected
    rolled = s3.list_object_versions(Bucket=versioned, Delimiter="/")
    assert [p["Prefix"] for p in rolled["CommonPrefixes"]] == ["b/"]
    assert [v["Key"] for v in rolled["Versions"]] == ["a", "a", "c", "c"]


def test_the_aws_cli_lists_and_fetches_versions(gateway, s3, versioned, tmp_path: Path) -> None:
    first = s3.put_object(Bucket=versioned, Key="cli.txt", Body=b"first")["VersionId"]
    s3.put_object(Bucket=versioned, Key="cli.txt", Body=b"second")
    listed = json.loads(
        _aws(gateway, tmp_path, "s3api", "list-object-versions", "--bucket", versioned)
    )
    assert [v["VersionId"] for v in listed["Versions"]][1] == first
    out = tmp_path / "old.txt"
    _aws(
        gateway,
        tmp_path,
        *("s3api", "get-object", "--bucket", versioned, "--key", "cli.txt"),
        *("--version-id", first, str(out)),
    )
    assert out.read_bytes() == b"first"
