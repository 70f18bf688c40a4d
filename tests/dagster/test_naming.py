"""Object names: segments are escaped so keys can never reshape the path."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from dagster import MultiPartitionKey

from dagster_natsobj.naming import asset_object_name, escape_segment, op_output_object_name


@pytest.mark.parametrize(
    ("segment", "escaped"),
    [
        ("2024-01-01", "2024-01-01"),
        ("2024-01-01-10:00", "2024-01-01-10:00"),
        ("a/b", "a%2Fb"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("upper[a]", "upper%5Ba%5D"),
        ("100%", "100%25"),
        ("ü", "%C3%BC"),
    ],
)
def test_escape_segment_is_reversible(segment, escaped):
    assert escape_segment(segment) == escaped
    assert "/" not in escaped
    assert unquote(escaped) == segment


def test_names_for_assets_partitions_and_ops():
    assert asset_object_name("p", ["a", "b"], None) == "p/a/b"
    assert asset_object_name("", ["a"], "x/y") == "a/x%2Fy"
    assert asset_object_name("/team/dagster/", ["a"], None) == "team/dagster/a"
    key = MultiPartitionKey({"region": "eu", "date": "2024-01-01"})
    assert asset_object_name("p", ["a"], key) == "p/a/2024-01-01/eu"
    assert op_output_object_name("p", ["run1", "op[k]", "result", "k"]) == (
        "p/storage/run1/op%5Bk%5D/result/k"
    )
