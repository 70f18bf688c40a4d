"""``NatsObjectStoreHook.list(prefix=, glob=, delimiter=)`` and ``list_prefixes`` against a
real nats-server, and the same names listed by the Amazon provider's own ``S3Hook`` on a real
S3 endpoint (moto's server): with a prefix and a delimiter, both list the same keys and the
same common prefixes."""

from __future__ import annotations

import pytest

from tests.airflow.s3_twins import nats_bucket_holding, s3_bucket_holding
from tests.archive.conftest import moto, s3_env  # noqa: F401  (fixtures)

NAMES = [
    "raw/a.csv",
    "raw/b.csv",
    "raw/notes.txt",
    "raw/2024/x.csv",
    "raw/2024/deep/y.csv",
    "raw/2025/z.json",
    "raw-notes.txt",
    "rawfile",
    "logs/2024-01-03",
    "logs/2024-01-04",
    "logs/2024-02-01",
    "a//b",
    "a/",
    "top.txt",
]


@pytest.fixture(scope="module")
def bucket(nats_default: str):
    yield from nats_bucket_holding(nats_default, NAMES)


@pytest.fixture(scope="module")
def s3_bucket(moto) -> str:  # noqa: F811
    """``bucket``'s names as keys of an S3 bucket."""
    return s3_bucket_holding(moto.endpoint, NAMES)


def names(infos) -> list[str]:
    return [info.name for info in infos]


@pytest.mark.parametrize(
    ("prefix", "glob", "expected"),
    [
        (None, None, sorted(NAMES)),
        ("raw/", None, sorted(n for n in NAMES if n.startswith("raw/"))),
        (None, "raw/*.csv", ["raw/a.csv", "raw/b.csv"]),
        (None, "raw/**.csv", ["raw/2024/deep/y.csv", "raw/2024/x.csv", "raw/a.csv", "raw/b.csv"]),
        ("raw/2024/", "**.csv", ["raw/2024/deep/y.csv", "raw/2024/x.csv"]),
        ("raw", "raw[-f]*", ["raw-notes.txt", "rawfile"]),
        ("logs/", "logs/2024-0[12]-0?", ["logs/2024-01-03", "logs/2024-01-04", "logs/2024-02-01"]),
        ("nothing/", None, []),
    ],
)
def test_hook_list_filters_by_prefix_and_glob(hook, bucket, prefix, glob, expected) -> None:
    assert names(hook.list(bucket, prefix=prefix, glob=glob)) == expected


def test_a_delimiter_leaves_out_what_a_common_prefix_holds(hook, bucket) -> None:
    level = hook.list(bucket, prefix="raw/", delimiter="/")
    assert names(level) == ["raw/a.csv", "raw/b.csv", "raw/notes.txt"]
    assert level[0].size == len("raw/a.csv")  # ObjectInfo, as without a delimiter
    assert hook.list_prefixes(bucket, prefix="raw/", delimiter="/") == ["raw/2024/", "raw/2025/"]
    # a glob narrows the names first, so only prefixes holding a match are listed
    assert hook.list_prefixes(bucket, prefix="raw/", delimiter="/", glob="**.json") == ["raw/2025/"]
    assert names(hook.list(bucket, prefix="raw/", delimiter="/", glob="raw/*.csv")) == [
        "raw/a.csv",
        "raw/b.csv",
    ]


@pytest.mark.parametrize(
    ("prefix", "delimiter"),
    [
        ("", ""),
        ("", "/"),
        ("raw/", "/"),
        ("raw", "/"),
        ("raw/20", "/"),
        ("logs/2024-", "-"),
        ("logs/", "-"),
        ("a/", "/"),
        ("", "//"),
        ("", ".txt"),
    ],
)
def test_keys_and_prefixes_are_s3s(hook, bucket, s3_bucket, s3_env, prefix, delimiter) -> None:  # noqa: F811
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    s3 = S3Hook(aws_conn_id=None)
    assert names(hook.list(bucket, prefix=prefix, delimiter=delimiter)) == s3.list_keys(
        s3_bucket, prefix=prefix, delimiter=delimiter
    )
    assert hook.list_prefixes(bucket, prefix=prefix, delimiter=delimiter) == s3.list_prefixes(
        s3_bucket, prefix=prefix, delimiter=delimiter
    )
