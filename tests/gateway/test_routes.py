"""The gateway's route table (issue 40, point 3): one row per operation, the docs' list made
from it, and a request no row serves refused by name, through a real gateway."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from natsobj.gateway import routes

DOC = Path(__file__).resolve().parents[2] / "docs" / "gateway.md"
# rows of the docs' "how each is served" table that are not operations of their own
NOT_OPERATIONS = {"`versionId`", "conditional GET/HEAD"}


def test_the_docs_list_the_route_table() -> None:
    text = DOC.read_text()
    assert routes.operations_table() in text, (
        "docs/gateway.md is out of date: paste natsobj.gateway.routes.operations_table()"
    )


def test_every_operation_the_docs_describe_is_a_row_and_every_row_is_described() -> None:
    text = DOC.read_text()
    described = text[text.index("How each is served:") :].splitlines()
    start = described.index("| S3 operation | how the gateway serves it |") + 2
    named: set[str] = set()
    for line in described[start:]:
        if not line.startswith("| "):
            break
        first = line.split("|")[1].strip()
        if first not in NOT_OPERATIONS:
            named.update(name.strip() for name in first.split(","))
    rows = {row.operation for row in routes.ROUTES}
    assert named == rows, (sorted(named - rows), sorted(rows - named))


def test_one_row_per_operation_and_no_two_rows_select_the_same_requests() -> None:
    names = [row.operation for row in routes.ROUTES]
    assert len(names) == len(set(names))
    seen = set()
    for row in routes.ROUTES:
        selector = (row.method, row.target, frozenset(row.query), row.header)
        assert selector not in seen, row.operation
        seen.add(selector)


@pytest.mark.parametrize(
    ("method", "bucket", "key", "query", "headers", "operation"),
    [
        ("GET", None, None, {}, {}, "ListBuckets"),
        ("GET", "b", None, {}, {}, "ListObjects"),
        ("GET", "b", None, {"list-type": "2"}, {}, "ListObjectsV2"),
        ("GET", "b", None, {"list-type": "1"}, {}, "ListObjects"),
        ("PUT", "b", "k", {}, {}, "PutObject"),
        ("PUT", "b", "k", {}, {"x-amz-copy-source": "/a/b"}, "CopyObject"),
        ("PUT", "b", "k", {"uploadId": "u", "partNumber": "1"}, {}, "UploadPart"),
        (
            "PUT",
            "b",
            "k",
            {"uploadId": "u", "partNumber": "1"},
            {"x-amz-copy-source": "/a/b"},
            "UploadPartCopy",
        ),
        ("POST", "b", "k", {"uploads": ""}, {}, "CreateMultipartUpload"),
        ("POST", "b", "k", {"uploadId": "u"}, {}, "CompleteMultipartUpload"),
        ("GET", "b", "k", {"uploadId": "u"}, {}, "ListParts"),
        ("GET", "b", "k", {"acl": ""}, {}, "GetObjectAcl"),
        ("HEAD", "b", "k", {}, {}, "HeadObject"),
    ],
)
def test_a_request_selects_its_row(method, bucket, key, query, headers, operation) -> None:
    assert routes.lookup(method, bucket, key, query, headers).operation == operation


def test_an_unserved_sub_resource_is_not_implemented_by_name(s3, gateway) -> None:
    s3.create_bucket(Bucket="routes")
    try:
        with pytest.raises(ClientError) as caught:
            s3.get_bucket_policy(Bucket="routes")
        error = caught.value.response["Error"]
        assert error["Code"] == "NotImplemented"
        assert re.search(r"GetBucketPolicy \(\?policy\)", error["Message"]), error["Message"]
        with pytest.raises(ClientError) as caught:
            s3.put_object_tagging(
                Bucket="routes", Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]}
            )
        assert "PutObjectTagging" in caught.value.response["Error"]["Message"]
    finally:
        s3.delete_bucket(Bucket="routes")


def test_a_never_versioned_bucket_answers_its_versioning_as_s3_does(s3, gateway) -> None:
    """rclone asks GetBucketVersioning before bucket operations and logs an error on a 501."""
    s3.create_bucket(Bucket="plain")
    try:
        answer = s3.get_bucket_versioning(Bucket="plain")
        assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert "Status" not in answer and "MFADelete" not in answer
        with pytest.raises(ClientError) as caught:
            s3.get_bucket_versioning(Bucket="never-made")
        assert caught.value.response["Error"]["Code"] == "NoSuchBucket"
    finally:
        s3.delete_bucket(Bucket="plain")
