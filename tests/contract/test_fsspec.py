"""The fsspec face of the operation options table: storage options and write keywords arrive
as text as often as not (``storage_options`` from a URL, a YAML config, pandas), so each row
the filesystem takes must read every spelling to the table's value, against a real server:
a put's ``ttl`` (``"2d"`` failed in ``float()``), and ``allow_missing_digest`` (the text
``"false"`` was truthy, and read an object nothing could verify)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from natsobj.errors import LinkError, MissingDigest
from natsobj.fs import NatsObjectFileSystem
from natsobj.operation_options import OPERATIONS, Face, for_face
from tests.contract.cases import Case, cases, defaults
from tests.contract.reached import ttl_of
from tests.security.test_missing_digest_faces import strip_digest


def filesystem(nats_url: str, **options) -> NatsObjectFileSystem:
    return NatsObjectFileSystem(nats_url, skip_instance_cache=True, **options)


def test_the_operations_fsspec_takes() -> None:
    assert {op for op in OPERATIONS if for_face(Face.FSSPEC, op)} == {
        "put",
        "get",
        "list",
        "version",
    }


@pytest.mark.parametrize("case", cases(Face.FSSPEC, "put"), ids=lambda c: c.id)
def test_put(case: Case, nats_url, sync_client, bucket_name) -> None:
    sync_client.create_store(bucket_name, delete_marker_ttl=1)
    fs = filesystem(nats_url)
    fs.pipe_file(f"nats://{bucket_name}/o", b"x", **{case.option.spelled(Face.FSSPEC): case.given})
    assert ttl_of(sync_client.store(bucket_name).get_info("o")) == case.expected


@pytest.fixture
def digestless(store, raw) -> str:
    store.put("plain", b"bytes nothing vouches for")
    strip_digest(raw, store.bucket, "plain")
    return f"nats://{store.bucket}/plain"


@pytest.fixture
def cross_link(sync_client, store) -> Iterator[str]:
    """A link to an object of another bucket: read only with follow_links."""
    other = sync_client.create_store(store.bucket + "x")
    try:
        store.add_link("link", other.put("target", b"bytes of another bucket"))
        yield f"nats://{store.bucket}/link"
    finally:
        sync_client.delete_store(other.bucket)


# each get row: the object it changes the answer for, what that object holds, and the refusal
GET_ROWS = {
    "allow_missing_digest": ("digestless", b"bytes nothing vouches for", MissingDigest),
    "follow_links": ("cross_link", b"bytes of another bucket", LinkError),
}


@pytest.mark.parametrize("case", cases(Face.FSSPEC, "get"), ids=lambda c: c.id)
def test_get(case: Case, nats_url, request) -> None:
    fixture, data, refusal = GET_ROWS[case.option.name]
    path = request.getfixturevalue(fixture)
    fs = filesystem(nats_url, **{case.option.spelled(Face.FSSPEC): case.given})
    assert fs.reading[case.option.name] is case.expected
    if case.expected:
        assert fs.cat_file(path) == data
    else:
        with pytest.raises(refusal):
            fs.cat_file(path)


def test_get_default(nats_url, digestless) -> None:
    fs = filesystem(nats_url)
    assert (
        fs.reading["allow_missing_digest"] is defaults(Face.FSSPEC, "get")["allow_missing_digest"]
    )
    with pytest.raises(MissingDigest):
        fs.cat_file(digestless)


@pytest.fixture
def two_versions(store) -> tuple[str, str]:
    """report.csv's first (kept) and current versions' ids, in a versioned bucket."""
    store.set_versioning("Enabled")
    return store.put("report.csv", b"first").nuid, store.put("report.csv", b"second").nuid


@pytest.mark.parametrize("case", cases(Face.FSSPEC, "version"), ids=lambda c: c.id)
def test_version(case: Case, nats_url, store, two_versions) -> None:
    """``version_aware`` as a filesystem option; ``version_id`` as a read's keyword: the
    current version for null, and a FileNotFoundError naming the id the server was asked
    for (no version has the spelled one)."""
    path = f"nats://{store.bucket}/report.csv"
    spelled = case.option.spelled(Face.FSSPEC)
    if case.option.name == "version_aware":
        fs = filesystem(nats_url, **{spelled: case.given})
        assert fs.version_aware is case.expected
        return
    fs = filesystem(nats_url, version_aware=True)
    if case.expected is None:
        assert fs.cat_file(path, **{spelled: case.given}) == b"second"
    else:
        with pytest.raises(FileNotFoundError, match=case.expected):
            fs.cat_file(path, **{spelled: case.given})


@pytest.mark.parametrize("case", cases(Face.FSSPEC, "list"), ids=lambda c: c.id)
def test_list(case: Case, nats_url, store, two_versions) -> None:
    fs = filesystem(nats_url, version_aware=True)
    names = fs.ls(store.bucket, detail=False, **{case.option.spelled(Face.FSSPEC): case.given})
    versions = [f"{store.bucket}/report.csv?versionId={v}" for v in sorted(two_versions)]
    assert names == (versions if case.expected else [f"{store.bucket}/report.csv"])


def test_version_defaults(nats_url, store, two_versions) -> None:
    assert defaults(Face.FSSPEC, "version") == {"version": None, "version_aware": False}
    assert filesystem(nats_url).version_aware is False
    assert filesystem(nats_url, version_aware=True).ls(store.bucket, detail=False) == [
        f"{store.bucket}/report.csv"
    ]
