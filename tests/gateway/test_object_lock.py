"""S3 Object Lock through the gateway, with boto3 as it comes: a bucket created with Object
Lock, its default retention, a version's retention and legal hold, and the refusals S3 makes
(AccessDenied for a locked version, the governance bypass)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

import natsobj


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return caught.value.response["Error"]["Code"]


@pytest.fixture
def locked(s3, nats_url: str) -> Iterator[str]:
    bucket = "l" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    yield bucket
    # locked versions outlive every S3 call, as they should: the stream itself goes
    with natsobj.connect(nats_url) as client:
        client.delete_store(bucket)


def test_a_bucket_created_with_object_lock_is_versioned_and_configured(s3, locked) -> None:
    assert s3.get_bucket_versioning(Bucket=locked)["Status"] == "Enabled"
    config = s3.get_object_lock_configuration(Bucket=locked)["ObjectLockConfiguration"]
    assert config == {"ObjectLockEnabled": "Enabled"}
    s3.put_object_lock_configuration(
        Bucket=locked,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}},
        },
    )
    config = s3.get_object_lock_configuration(Bucket=locked)["ObjectLockConfiguration"]
    assert config["Rule"]["DefaultRetention"] == {"Mode": "GOVERNANCE", "Days": 1}
    version = s3.put_object(Bucket=locked, Key="k", Body=b"x")["VersionId"]
    retention = s3.get_object_retention(Bucket=locked, Key="k", VersionId=version)["Retention"]
    assert retention["Mode"] == "GOVERNANCE"
    with pytest.raises(ClientError) as caught:
        s3.delete_object(Bucket=locked, Key="k", VersionId=version)
    assert _code(caught) == "AccessDenied"
    s3.delete_object(Bucket=locked, Key="k", VersionId=version, BypassGovernanceRetention=True)
    with pytest.raises(ClientError) as caught:
        s3.put_bucket_versioning(Bucket=locked, VersioningConfiguration={"Status": "Suspended"})
    assert _code(caught) == "InvalidBucketState"


def test_a_compliance_retention_is_kept_from_every_caller(s3, locked) -> None:
    until = datetime.now(UTC) + timedelta(days=1)
    version = s3.put_object(
        Bucket=locked,
        Key="audit",
        Body=b"entries",
        ObjectLockMode="COMPLIANCE",
        ObjectLockRetainUntilDate=until,
    )["VersionId"]
    got = s3.get_object_retention(Bucket=locked, Key="audit", VersionId=version)["Retention"]
    assert got["Mode"] == "COMPLIANCE"
    assert abs(got["RetainUntilDate"] - until) < timedelta(seconds=1)
    with pytest.raises(ClientError) as caught:
        s3.delete_object(
            Bucket=locked, Key="audit", VersionId=version, BypassGovernanceRetention=True
        )
    assert _code(caught) == "AccessDenied"
    with pytest.raises(ClientError) as caught:
        s3.put_object_retention(
            Bucket=locked,
            Key="audit",
            VersionId=version,
            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until - timedelta(hours=1)},
            BypassGovernanceRetention=True,
        )
    assert _code(caught) == "AccessDenied"
    assert s3.get_object(Bucket=locked, Key="audit")["Body"].read() == b"entries"
    s3.put_object_retention(  # lengthening is allowed
        Bucket=locked,
        Key="audit",
        VersionId=version,
        Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until + timedelta(days=1)},
    )


def test_a_legal_hold_holds_until_lifted(s3, locked) -> None:
    version = s3.put_object(
        Bucket=locked, Key="case", Body=b"evidence", ObjectLockLegalHoldStatus="ON"
    )["VersionId"]
    hold = s3.get_object_legal_hold(Bucket=locked, Key="case", VersionId=version)["LegalHold"]
    assert hold == {"Status": "ON"}
    answer = s3.delete_objects(
        Bucket=locked, Delete={"Objects": [{"Key": "case", "VersionId": version}]}
    )
    assert [e["Code"] for e in answer.get("Errors", [])] == ["AccessDenied"]
    s3.put_object_legal_hold(
        Bucket=locked, Key="case", VersionId=version, LegalHold={"Status": "OFF"}
    )
    s3.delete_object(Bucket=locked, Key="case", VersionId=version)


def test_object_lock_operations_need_a_bucket_with_object_lock(s3) -> None:
    bucket = "p" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=bucket)
    try:
        with pytest.raises(ClientError) as caught:
            s3.get_object_lock_configuration(Bucket=bucket)
        assert _code(caught) == "ObjectLockConfigurationNotFoundError"
        with pytest.raises(ClientError) as caught:
            s3.put_object_lock_configuration(
                Bucket=bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}
            )
        assert _code(caught) == "InvalidBucketState"
        s3.put_object(Bucket=bucket, Key="k", Body=b"x")
        with pytest.raises(ClientError) as caught:
            s3.get_object_retention(Bucket=bucket, Key="k")
        assert _code(caught) == "InvalidRequest"
        s3.delete_object(Bucket=bucket, Key="k")
    finally:
        s3.delete_bucket(Bucket=bucket)
