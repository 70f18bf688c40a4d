"""S3 lifecycle configuration through the gateway (Put/Get/DeleteBucketLifecycle), with boto3
and the AWS CLI as they come: the round trip, the natsobj rules it sets (which puts and the
version sweep apply), and the parts natsobj cannot do refused rather than dropped."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

import natsobj
from natsobj.aio import version_expiry
from natsobj.gateway.lifecycle import S3_METADATA, glob_prefix, prefix_glob
from natsobj.lifecycle import LIFECYCLE_METADATA_KEY, LifecycleRule, decode_rules, encode_rules
from natsobj.sync import run
from natsobj.versioning import utcnow
from tests.gateway.test_clients import _aws


def _days(rule_id: str, prefix: str, days: int, status: str = "Enabled") -> dict:
    """An S3 rule expiring what ``prefix`` starts ``days`` after it is written."""
    return {
        "ID": rule_id,
        "Filter": {"Prefix": prefix},
        "Status": status,
        "Expiration": {"Days": days},
    }


ROUND_TRIP = [
    {"ID": "tmp", "Prefix": "tmp/", "Status": "Enabled", "Expiration": {"Days": 7}},
    {
        "ID": "reports",
        "Filter": {"Prefix": "reports/"},
        "Status": "Enabled",
        "NoncurrentVersionExpiration": {"NoncurrentDays": 30, "NewerNoncurrentVersions": 3},
    },
    {
        "ID": "markers",
        "Filter": {"Prefix": "logs/"},
        "Status": "Enabled",
        "Expiration": {"ExpiredObjectDeleteMarker": True},
    },
    {
        "ID": "off",
        "Filter": {"Prefix": "scratch/"},
        "Status": "Disabled",
        "Expiration": {"Days": 1},
    },
    {"ID": "all", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 90}},
]


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return caught.value.response["Error"]["Code"]


def _put(s3, bucket: str, rules: list[dict]) -> None:  # type: ignore[no-untyped-def]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})


def _no_configuration(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as caught:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert _code(caught) == "NoSuchLifecycleConfiguration"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@pytest.fixture
def bucket(s3, nats_url: str) -> Iterator[str]:
    name = "lc" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=name)
    yield name
    with natsobj.connect(nats_url) as client:
        client.delete_store(name)


@pytest.fixture
def store(sync_client, bucket: str):  # type: ignore[no-untyped-def]
    return sync_client.store(bucket)


def test_put_get_delete_round_trip(s3, bucket: str, store) -> None:
    _no_configuration(s3, bucket)
    assert s3.delete_bucket_lifecycle(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204

    _put(s3, bucket, ROUND_TRIP)
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == ROUND_TRIP
    # the natsobj rules every face applies: the enabled ones, shortest expiration first (S3
    # applies the shortest where rules overlap; natsobj the first match)
    kept = store.lifecycle_rules()
    assert [(r.rule_id, r.pattern) for r in kept] == [
        ("tmp", "tmp/**"),
        ("all", "**"),
        ("reports", "reports/**"),
        ("markers", "logs/**"),
    ]
    assert kept[0].ttl == timedelta(days=7)
    assert (kept[2].noncurrent_days, kept[2].newer_noncurrent) == (30, 3)
    assert kept[3].expired_delete_markers

    _put(s3, bucket, ROUND_TRIP[:1])  # a Put replaces every rule
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == ROUND_TRIP[:1]
    assert [r.pattern for r in store.lifecycle_rules()] == ["tmp/**"]

    s3.delete_bucket_lifecycle(Bucket=bucket)
    _no_configuration(s3, bucket)
    assert store.lifecycle_rules() == []


def test_a_rule_without_an_id_gets_one_that_stays(s3, bucket: str) -> None:
    _put(s3, bucket, [{"Prefix": "a/", "Status": "Enabled", "Expiration": {"Days": 1}}])
    first = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["ID"]
    assert first
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["ID"] == first


def test_only_disabled_rules_are_kept_and_not_applied(s3, bucket: str, store) -> None:
    rules = [{"ID": "off", "Prefix": "", "Status": "Disabled", "Expiration": {"Days": 1}}]
    _put(s3, bucket, rules)
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == rules
    assert store.lifecycle_rules() == []
    s3.put_object(Bucket=bucket, Key="stays", Body=b"x")
    assert store.get_info("stays").expires is None


def test_puts_through_the_gateway_take_the_shortest_matching_expiration(
    s3, bucket: str, store
) -> None:
    _put(
        s3,
        bucket,
        [
            {
                "ID": "all",
                "Filter": {"Prefix": ""},
                "Status": "Enabled",
                "Expiration": {"Days": 30},
            },
            {
                "ID": "tmp",
                "Filter": {"Prefix": "tmp/"},
                "Status": "Enabled",
                "Expiration": {"Days": 1},
            },
            {
                "ID": "off",
                "Filter": {"Prefix": "x/"},
                "Status": "Disabled",
                "Expiration": {"Days": 1},
            },
        ],
    )
    for key in ("tmp/a", "b", "x/c"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    now = utcnow()
    for key, days in (("tmp/a", 1), ("b", 30), ("x/c", 30)):
        expires = store.get_info(key).expires
        assert expires is not None
        assert abs(expires - (now + timedelta(days=days))) < timedelta(minutes=1), key


def test_noncurrent_versions_expire_by_the_sweep(s3, bucket: str, store) -> None:
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    _put(
        s3,
        bucket,
        [
            {
                "ID": "old-logs",
                "Filter": {"Prefix": "logs/"},
                "Status": "Enabled",
                "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
            }
        ],
    )
    # S3 expires a current version behind a delete marker; natsobj's TTL would remove it
    with pytest.raises(ClientError) as caught:
        _put(s3, bucket, [_days("tmp", "tmp/", 1)])
    assert _code(caught) == "NotImplemented"
    assert [r.rule_id for r in store.lifecycle_rules()] == ["old-logs"]
    old = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"old")["VersionId"]
    new = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"new")["VersionId"]
    s3.put_object(Bucket=bucket, Key="other", Body=b"1")
    s3.put_object(Bucket=bucket, Key="other", Body=b"2")  # no rule governs its versions
    assert run(version_expiry.plan(store.aio, now=utcnow() + timedelta(hours=23))) == []

    due = run(version_expiry.plan(store.aio, now=utcnow() + timedelta(days=2)))
    assert [(r.version.name, r.version.version_id) for r in due] == [("logs/a", old)]
    assert [r.done for r in run(version_expiry.apply(store.aio, due))] == [True]
    listed = s3.list_object_versions(Bucket=bucket, Prefix="logs/")["Versions"]
    assert [v["VersionId"] for v in listed] == [new]
    assert len(s3.list_object_versions(Bucket=bucket, Prefix="other")["Versions"]) == 2


REFUSED = {
    "Transition": (
        {"Filter": {"Prefix": "a/"}, "Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]},
        "NotImplemented",
    ),
    "NoncurrentVersionTransition": (
        {
            "Filter": {"Prefix": "a/"},
            "NoncurrentVersionTransitions": [{"NoncurrentDays": 30, "StorageClass": "GLACIER"}],
        },
        "NotImplemented",
    ),
    "Expiration Date": (
        {"Filter": {"Prefix": "a/"}, "Expiration": {"Date": "2030-01-01T00:00:00Z"}},
        "NotImplemented",
    ),
    "date not at midnight": (
        {"Filter": {"Prefix": "a/"}, "Expiration": {"Date": "2030-01-01T10:00:00Z"}},
        "InvalidArgument",
    ),
    "tag filter": (
        {"Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Expiration": {"Days": 1}},
        "NotImplemented",
    ),
    "prefix and tag": (
        {
            "Filter": {"And": {"Prefix": "a/", "Tags": [{"Key": "k", "Value": "v"}]}},
            "Expiration": {"Days": 1},
        },
        "NotImplemented",
    ),
    "size filter": (
        {"Filter": {"ObjectSizeGreaterThan": 1024}, "Expiration": {"Days": 1}},
        "NotImplemented",
    ),
    "AbortIncompleteMultipartUpload": (
        {"Filter": {"Prefix": "a/"}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        "NotImplemented",
    ),
    "lower-case status": (
        {"Filter": {"Prefix": "a/"}, "Status": "enabled", "Expiration": {"Days": 1}},
        "MalformedXML",
    ),
    "id too long": (
        {"ID": "a" * 256, "Filter": {"Prefix": "a/"}, "Expiration": {"Days": 1}},
        "InvalidArgument",
    ),
    "zero days": ({"Filter": {"Prefix": "a/"}, "Expiration": {"Days": 0}}, "InvalidArgument"),
    "days and marker": (
        {
            "Filter": {"Prefix": "a/"},
            "Expiration": {"Days": 1, "ExpiredObjectDeleteMarker": True},
        },
        "InvalidArgument",
    ),
    "no action": ({"Filter": {"Prefix": "a/"}}, "InvalidRequest"),
    "prefix twice": (
        {"Filter": {"Prefix": "a/"}, "Prefix": "a/", "Expiration": {"Days": 1}},
        "MalformedXML",
    ),
    "no filter": ({"Expiration": {"Days": 1}}, "MalformedXML"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_natsobj_cannot_do_is_refused_and_nothing_is_stored(
    s3, bucket: str, store, case: str
) -> None:
    rule, code = REFUSED[case]
    with pytest.raises(ClientError) as caught:
        _put(s3, bucket, [{"ID": "r", "Status": "Enabled", **rule}])
    assert _code(caught) == code, caught.value.response["Error"]["Message"]
    _no_configuration(s3, bucket)
    assert store.lifecycle_rules() == []


def test_same_ids_and_overlapping_version_rules_are_refused(s3, bucket: str) -> None:
    twice = [_days("r", "a/", 1), _days("r", "b/", 1)]
    with pytest.raises(ClientError) as caught:
        _put(s3, bucket, twice)
    assert _code(caught) == "InvalidArgument"
    # S3 applies both rules' version actions to logs/x; natsobj one rule's: refused
    overlapping = [
        {
            "ID": "markers",
            "Filter": {"Prefix": ""},
            "Status": "Enabled",
            "Expiration": {"ExpiredObjectDeleteMarker": True},
        },
        {
            "ID": "logs",
            "Filter": {"Prefix": "logs/"},
            "Status": "Enabled",
            "NoncurrentVersionExpiration": {"NoncurrentDays": 3},
        },
    ]
    with pytest.raises(ClientError) as caught:
        _put(s3, bucket, overlapping)
    assert _code(caught) == "InvalidArgument"
    assert "overlap" in caught.value.response["Error"]["Message"]
    overlapping[1]["Status"] = "Disabled"  # a disabled rule is not applied: no overlap
    _put(s3, bucket, overlapping)
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == overlapping


def test_an_expiration_needs_per_object_ttls_on_the_bucket(s3, sync_client) -> None:
    bucket = "lc" + uuid.uuid4().hex[:10]
    sync_client.create_store(bucket, allow_msg_ttl=False)
    try:
        with pytest.raises(ClientError) as caught:
            _put(
                s3,
                bucket,
                [
                    {
                        "ID": "r",
                        "Filter": {"Prefix": ""},
                        "Status": "Enabled",
                        "Expiration": {"Days": 1},
                    }
                ],
            )
        assert _code(caught) == "InvalidBucketState"
        assert "per-object" in caught.value.response["Error"]["Message"]
        _no_configuration(s3, bucket)
        # versions are swept, not expired by the server: no TTLs needed
        versions_only = [
            {
                "ID": "v",
                "Filter": {"Prefix": ""},
                "Status": "Enabled",
                "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
            }
        ]
        _put(s3, bucket, versions_only)
        assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == versions_only
    finally:
        sync_client.delete_store(bucket)


def test_rules_set_by_another_face_are_shown_as_they_are(s3, bucket: str, store) -> None:
    _put(s3, bucket, ROUND_TRIP)
    # the CLI or Python replaces the rules: the disabled rule and the order put are gone
    store.set_lifecycle_rules([LifecycleRule("tmp/**", timedelta(days=2))])
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == [
        {"Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 2}}
    ]


@pytest.mark.parametrize(
    "rule",
    [
        LifecycleRule("tmp/*.csv", timedelta(days=2)),  # a glob no prefix can say
        LifecycleRule("tmp/**", timedelta(hours=12)),  # S3 counts whole days
        LifecycleRule("tmp/**", None),  # never
        LifecycleRule("tmp/**", timedelta(days=1), expired_delete_markers=True),
    ],
    ids=str,
)
def test_rules_s3_cannot_state_are_not_shown_as_less(
    s3, bucket: str, store, rule: LifecycleRule
) -> None:
    store.set_lifecycle_rules([rule])
    with pytest.raises(ClientError) as caught:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert _code(caught) == "NotImplemented"
    assert rule.pattern in caught.value.response["Error"]["Message"]


def test_the_aws_cli_puts_and_gets_a_configuration(
    gateway, s3, bucket: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config").write_text("[default]\ns3 =\n    signature_version = s3v4\n")
    config = tmp_path / "lifecycle.json"
    config.write_text(json.dumps({"Rules": ROUND_TRIP}))
    _aws(
        gateway,
        home,
        *("s3api", "put-bucket-lifecycle-configuration", "--bucket", bucket),
        *("--lifecycle-configuration", f"file://{config}"),
    )
    shown = json.loads(
        _aws(gateway, home, "s3api", "get-bucket-lifecycle-configuration", "--bucket", bucket)
    )
    assert shown["Rules"] == ROUND_TRIP
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == ROUND_TRIP


@pytest.mark.parametrize("prefix", ["", "tmp/", "a*b?c/", "x[y", "we]ird", "**", "a/[*]"])
def test_a_prefix_is_a_glob_matching_exactly_the_names_it_starts(prefix: str) -> None:
    if "[" in prefix and any(ch in prefix[prefix.find("[") :] for ch in "]*?"):
        with pytest.raises(Exception, match="cannot match literally"):
            prefix_glob(prefix)
        return
    rule = LifecycleRule(prefix_glob(prefix), timedelta(days=1))
    assert glob_prefix(rule.pattern) == prefix
    assert rule.matches(prefix + "anything/below")
    assert not rule.matches("z" + prefix) or prefix == ""


def test_rule_ids_are_kept_and_rules_without_one_still_decode() -> None:
    rule = LifecycleRule("tmp/**", timedelta(days=1), rule_id="tmp")
    text = encode_rules([rule])
    assert decode_rules({LIFECYCLE_METADATA_KEY: text}) == [rule]
    old = '[{"pattern":"tmp/**","ttl":86400}]'  # written before ids were kept
    assert decode_rules({LIFECYCLE_METADATA_KEY: old}) == [
        LifecycleRule("tmp/**", timedelta(days=1))
    ]
    not_a_label = '[{"pattern":"tmp/**","ttl":86400,"id":7}]'
    assert decode_rules({LIFECYCLE_METADATA_KEY: not_a_label})[0].rule_id is None


@pytest.mark.parametrize(
    "record",
    ['{"with":WITH,"rules":[{"at":5}]}', '{"with":WITH,"rules":"x"}', "[", '{"with":WITH}'],
)
def test_a_record_of_the_configuration_that_does_not_fit_is_not_believed(
    s3, bucket: str, store, record: str
) -> None:
    """Anyone allowed to update the stream can write the record: one that does not fit the
    rules kept is ignored, and the rules are shown as they are."""
    _put(s3, bucket, [_days("b", "b/", 2), _days("a", "a/", 1, "Disabled")])
    text = run(store.aio.bucket_stream.info()).config["metadata"][LIFECYCLE_METADATA_KEY]
    written = record.replace("WITH", json.dumps(text))
    run(store.aio.bucket_stream.set_metadata(S3_METADATA, written))
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == [_days("b", "b/", 2)]
