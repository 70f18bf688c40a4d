"""``NatsObjectStoreHook``'s twins of S3Hook's ``check_for_bucket``, ``check_for_key``,
``check_for_prefix`` and ``sync_to_local_dir`` against a real nats-server, each answered the
same way the Amazon provider's own ``S3Hook`` answers on a real S3 endpoint (moto's server)
holding the same names."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.airflow.s3_twins import nats_bucket_holding, s3_bucket_holding
from tests.archive.conftest import moto, s3_env  # noqa: F401  (fixtures)

NAMES = [
    "raw/a.csv",
    "raw/2024/x.csv",
    "raw/2024/deep/y.csv",
    "raw-notes.txt",
    "logs/2024-01-03",
    "site/index.html",
    "site/css/a.css",
    "site/img/deep/logo.svg",
]


@pytest.fixture(scope="module")
def bucket(nats_default: str):
    yield from nats_bucket_holding(nats_default, NAMES, deleted=["gone"])


@pytest.fixture(scope="module")
def s3_bucket(moto) -> str:  # noqa: F811
    """``bucket``'s names as keys of an S3 bucket."""
    return s3_bucket_holding(moto.endpoint, NAMES)


@pytest.fixture
def s3(s3_env):  # noqa: F811
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return S3Hook(aws_conn_id=None)


def test_check_for_bucket(hook, bucket, s3_bucket, s3) -> None:
    assert hook.check_for_bucket(bucket) is True is s3.check_for_bucket(s3_bucket)
    assert hook.check_for_bucket("nosuchbucket") is False is s3.check_for_bucket("nosuchbucket")
    # asked of the server, not of a binding the process cached before the bucket went
    name = f"t{uuid.uuid4().hex[:12]}"
    hook.create_store(name)
    hook.get_store(name)
    hook.get_conn().delete_store(name)
    assert hook.check_for_bucket(name) is False


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("raw/a.csv", True),
        ("raw/2024/deep/y.csv", True),
        ("raw", False),  # a prefix is not a key
        ("raw/", False),
        ("raw/a.cs", False),
        ("missing", False),
    ],
)
def test_check_for_key(hook, bucket, s3_bucket, s3, key, expected) -> None:
    assert hook.check_for_key(key, bucket) is expected
    assert s3.check_for_key(key, s3_bucket) is expected


def test_check_for_key_of_deleted_object_and_missing_bucket(hook, bucket, s3) -> None:
    assert hook.check_for_key("gone", bucket) is False
    assert hook.check_for_key(key="raw/a.csv", bucket_name="nosuchbucket") is False
    assert s3.check_for_key(key="raw/a.csv", bucket_name="nosuchbucket") is False


@pytest.mark.parametrize(
    ("prefix", "delimiter", "expected"),
    [
        ("raw", "/", True),
        ("raw/", "/", True),
        ("raw/2024", "/", True),
        ("raw/2024/deep", "/", True),
        ("raw/20", "/", False),  # a string prefix of a directory is not one
        ("raw/a.csv", "/", False),  # an object is not a directory
        ("logs/2024", "-", True),
        ("logs/2025", "-", False),
        ("nothing", "/", False),
    ],
)
def test_check_for_prefix(hook, bucket, s3_bucket, s3, prefix, delimiter, expected) -> None:
    assert hook.check_for_prefix(prefix, delimiter, bucket) is expected
    assert s3.check_for_prefix(prefix, delimiter, s3_bucket) is expected


def test_check_for_prefix_in_missing_bucket(hook) -> None:
    assert hook.check_for_prefix("raw", "/", "nosuchbucket") is False


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _dirs(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir())


def test_sync_to_local_dir_lays_out_files_as_s3hook(hook, bucket, s3_bucket, s3, tmp_path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root in (ours, theirs):
        (root / "stale" / "deeper").mkdir(parents=True)
        (root / "stale" / "deeper" / "old.txt").write_text("old")
        (root / "old.txt").write_text("old")
    fetched = hook.sync_to_local_dir(bucket, ours, prefix="site")
    s3.sync_to_local_dir(s3_bucket, theirs, s3_prefix="site")
    assert fetched == ["site/css/a.css", "site/img/deep/logo.svg", "site/index.html"]
    expected = {
        "css/a.css": b"site/css/a.css",
        "img/deep/logo.svg": b"site/img/deep/logo.svg",
        "index.html": b"site/index.html",
    }
    assert _tree(ours) == expected
    assert _dirs(ours) == ["css", "img", "img/deep"]  # stale files and dirs removed, nested too
    # the same as S3Hook's; its older releases (the floor make test-compat installs) left stale
    # files below the top level alone, so the comparison leaves out the nested stale folder
    assert {k: v for k, v in _tree(theirs).items() if not k.startswith("stale/")} == expected
    assert [d for d in _dirs(theirs) if not d.startswith("stale")] == _dirs(ours)


def test_sync_to_local_dir_fetches_what_changed(hook, bucket, tmp_path) -> None:
    root = tmp_path / "mirror"
    assert len(hook.sync_to_local_dir(bucket, root, prefix="raw/")) == 3
    assert hook.sync_to_local_dir(bucket, root, prefix="raw/") == []  # nothing changed
    # same size, newer mtime, other bytes: S3Hook's mtime test would keep it; the digest does not
    (root / "a.csv").write_bytes(b"RAW/A.CSV")
    (root / "extra.txt").write_text("mine")
    assert hook.sync_to_local_dir(bucket, root, prefix="raw", delete_stale=False) == ["raw/a.csv"]
    assert (root / "a.csv").read_bytes() == b"raw/a.csv"
    assert (root / "extra.txt").read_text() == "mine"  # kept without delete_stale
    assert hook.sync_to_local_dir(bucket, root, prefix="raw") == []
    assert not (root / "extra.txt").exists()
    assert sorted(_tree(root)) == ["2024/deep/y.csv", "2024/x.csv", "a.csv"]


@pytest.mark.parametrize(
    ("names", "refused"),
    [
        (["p/ok", "p/../../escape.txt"], r"object 'p/\.\./\.\./escape\.txt'.*no local path"),
        (["p/ok", "p/x", "p//x"], r"object 'p/x'.*local path 'x' is also that of.*'p//x'.*alone"),
        (["p/ok", "p/a", "p/a/b"], r"object 'p/a'.*local path 'a' is also that of.*'p/a/b'"),
    ],
)
def test_sync_to_local_dir_writes_nothing_when_a_name_has_no_place(
    hook, tmp_path, names, refused
) -> None:
    """A name leaving the directory, two names on one local path, a file another name needs
    as a directory: the CLI skips these (natsobj.local.mirror's layout); the hook refuses the
    sync before writing anything."""
    from natsobj.errors import UnsafeLocalPath

    name = f"t{uuid.uuid4().hex[:12]}"
    store = hook.create_store(name)
    try:
        for object_name in names:
            store.put(object_name, object_name.encode())
        with pytest.raises(UnsafeLocalPath, match=refused):
            hook.sync_to_local_dir(name, tmp_path / "inside", prefix="p")
        assert not (tmp_path / "inside").exists()
        assert not (tmp_path / "escape.txt").exists()
    finally:
        hook.delete_store(name)


def test_sync_to_local_dir_takes_allow_missing_digest(hook, raw, tmp_path) -> None:
    """A record without a digest is refused, as by the hook's other reads, unless allowed
    (any spelling of ``natsobj.operation_options``)."""
    from natsobj.errors import MissingDigest
    from tests.security.test_missing_digest_faces import strip_digest

    name = f"t{uuid.uuid4().hex[:12]}"
    store = hook.create_store(name)
    try:
        store.put("p/plain", b"no digest")
        strip_digest(raw, name, "p/plain")
        with pytest.raises(MissingDigest, match="p/plain"):
            hook.sync_to_local_dir(name, tmp_path, prefix="p")
        assert hook.sync_to_local_dir(name, tmp_path, prefix="p", allow_missing_digest=True) == [
            "p/plain"
        ]
        assert (tmp_path / "plain").read_bytes() == b"no digest"
    finally:
        hook.delete_store(name)
