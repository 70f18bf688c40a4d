"""Object versions through the nats:// filesystem against a real server, in s3fs's words
(``version_aware=True``, ``version_id=``, ``bucket/key?versionId=ID``, ``object_version_info``,
``ls(versions=True)``): every call reads, removes or copies exactly the version it names, and
one that is not version-aware refuses a version as s3fs's does."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pandas as pd
import pytest

from natsobj.fs import NatsObjectFileSystem
from natsobj.names import chunk_subject
from natsobj.sync import run

NOT_AN_ID = "0123456789abcdefghijkZ"
BODIES = (b"one", b"two!", b"three")


def aware(nats_url: str, **options) -> NatsObjectFileSystem:
    options.setdefault("version_aware", True)
    return NatsObjectFileSystem(nats_url, skip_instance_cache=True, **options)


@pytest.fixture
def ids(store) -> list[str]:
    """Three versions of report.csv in a versioned bucket, oldest first."""
    store.set_versioning("Enabled")
    return [store.put("report.csv", body).nuid for body in BODIES]


def test_each_read_reads_the_version_named(nats_url, store, ids, tmp_path: Path) -> None:
    fs = aware(nats_url, version_aware="yes")  # storage options arrive as text
    path = f"{store.bucket}/report.csv"
    for version_id, body in zip(ids, BODIES, strict=True):
        in_path = f"{path}?versionId={version_id}"
        assert fs.cat_file(path, version_id=version_id) == body
        assert fs.cat_file(in_path) == body
        assert fs.cat_file(in_path, start=1, end=3) == body[1:3]
        assert fs.cat_ranges([in_path, path], [0, 0], [2, 2]) == [body[:2], b"th"]
        with fs.open(path, "rb", version_id=version_id) as handle:
            handle.seek(1)
            assert handle.read() == body[1:]
        info = fs.info(path, version_id=version_id)
        assert (info["VersionId"], info["size"], info["name"]) == (version_id, len(body), path)
        assert fs.info(in_path)["VersionId"] == version_id
        local = tmp_path / version_id
        fs.get_file(in_path, str(local))
        assert local.read_bytes() == body
    assert fs.info(path)["VersionId"] == ids[-1]  # the current one
    assert fs.cat_file(path, version_id="null") == b"three"  # S3's null: the current one
    with fsspec.open(f"nats://{path}?versionId={ids[0]}", "rb", url=nats_url) as opened:
        assert opened.read() == b"one"  # a URL naming a version opens a version-aware fs
    frame = pd.read_csv(
        f"nats://{path}?versionId={ids[1]}", storage_options={"url": nats_url}, header=None
    )
    assert frame.iloc[0, 0] == "two!"


def test_listings_show_every_version(nats_url, store, ids) -> None:
    fs = aware(nats_url)
    store.put("sub/x.bin", b"x")
    bucket = store.bucket
    named = fs.ls(bucket, detail=False, versions=True)
    assert named == sorted([f"{bucket}/sub"] + [f"{bucket}/report.csv?versionId={v}" for v in ids])
    entries = {e["name"]: e for e in fs.ls(f"{bucket}/report.csv", versions="true")}
    assert len(entries) == 3
    latest = entries[f"{bucket}/report.csv?versionId={ids[-1]}"]
    assert latest["IsLatest"] is True and latest["VersionId"] == ids[-1] and latest["size"] == 5
    for name in entries:
        assert fs.cat_file(name) == BODIES[ids.index(name.rsplit("=", 1)[1])]
    assert [e["name"] for e in fs.ls(bucket)] == [f"{bucket}/report.csv", f"{bucket}/sub"]

    store.delete("report.csv")  # a delete marker: not a version s3fs lists
    listed = fs.object_version_info(f"{bucket}/report")
    assert [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in listed] == [
        ("report.csv", ids[2], False, 5),
        ("report.csv", ids[1], False, 4),
        ("report.csv", ids[0], False, 3),
    ]
    assert all(v["LastModified"] is not None and v["Lost"] is False for v in listed)


def test_rm_removes_the_version_named_for_good(nats_url, store, ids) -> None:
    fs = aware(nats_url)
    path = f"{store.bucket}/report.csv"
    fs.rm_file(path, version_id=ids[1])
    assert [v.version_id for v in store.versions()] == [ids[2], ids[0]]
    fs.rm(f"{path}?versionId={ids[0]}")
    assert [v.version_id for v in store.versions()] == [ids[2]]
    assert fs.cat_file(path) == b"three"  # the current version untouched
    with pytest.raises(FileNotFoundError, match=ids[0]):
        fs.rm_file(f"{path}?versionId={ids[0]}")
    fs.rm_file(path)  # the current object: a delete marker, as before
    assert [v.delete_marker for v in store.versions()] == [True, False]


def test_copying_a_version_over_the_current_one_restores_it(nats_url, store, ids) -> None:
    fs = aware(nats_url)
    path = f"{store.bucket}/report.csv"
    fs.cp_file(f"{path}?versionId={ids[0]}", path)
    assert fs.cat_file(path) == b"one"
    assert [v.version_id for v in store.versions()][1:] == ids[::-1]  # every version kept
    with pytest.raises(ValueError, match="cannot name one"):
        fs.cp_file(path, f"{path}?versionId={ids[1]}")
    with pytest.raises(ValueError, match="cannot name one"):
        fs.pipe_file(f"{path}?versionId={ids[1]}", b"over a version")
    with pytest.raises(ValueError, match="cannot name one"):
        fs.open(f"{path}?versionId={ids[1]}", "wb")
    assert fs.cat_file(path, version_id=ids[1]) == b"two!"


def test_a_version_that_is_not_there_or_lost_serves_nothing(nats_url, store, ids) -> None:
    fs = aware(nats_url)
    path = f"{store.bucket}/report.csv"
    for call in (
        lambda: fs.cat_file(path, version_id=NOT_AN_ID),
        lambda: fs.open(path, "rb", version_id=NOT_AN_ID),
        lambda: fs.info(f"{path}?versionId={NOT_AN_ID}"),
    ):
        with pytest.raises(FileNotFoundError, match=NOT_AN_ID):
            call()
    for bad in ("*", "a.b", "x" * 23):
        with pytest.raises(ValueError, match="version_id"):
            fs.cat_file(path, version_id=bad)
    with pytest.raises(ValueError, match="two versions"):
        fs.cat_file(f"{path}?versionId={ids[0]}", version_id=ids[1])
    run(store.aio.bucket_stream.purge(chunk_subject(store.bucket, ids[0])))
    assert [v["Lost"] for v in fs.object_version_info(path)] == [False, False, True]
    with pytest.raises(FileNotFoundError, match="is lost"):
        fs.cat_file(path, version_id=ids[0])


def test_a_filesystem_that_is_not_version_aware_refuses_versions(nats_url, store, ids) -> None:
    """As s3fs's does: version_id, versions and object_version_info are ValueError; and a
    path's ?versionId= is part of the name, never a version read as the current object."""
    fs = NatsObjectFileSystem(nats_url, skip_instance_cache=True)
    path = f"{store.bucket}/report.csv"
    assert fs.version_aware is False and "VersionId" not in fs.info(path)
    for call in (
        lambda: fs.cat_file(path, version_id=ids[0]),
        lambda: fs.open(path, "rb", version_id=ids[0]),
        lambda: fs.info(path, version_id=ids[0]),
        lambda: fs.ls(store.bucket, versions=True),
    ):
        with pytest.raises(ValueError, match="not version aware"):
            call()
    with pytest.raises(ValueError, match="non-version aware"):
        fs.object_version_info(path)
    with pytest.raises(FileNotFoundError):
        fs.cat_file(f"{path}?versionId={ids[0]}")
    store.put(f"report.csv?versionId={ids[0]}", b"a name with a query in it")
    assert fs.cat_file(f"{path}?versionId={ids[0]}") == b"a name with a query in it"
