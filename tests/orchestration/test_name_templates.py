"""Name templates (natsobj.orchestration.name_templates): an object name to the fields a face needs,
such as a partition key, in one pass with no backtracking."""

from __future__ import annotations

import time

import pytest

from natsobj.orchestration.name_templates import NameTemplate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("template", "name", "fields"),
    [
        ("daily/{date}.parquet", "daily/2026-11-01.parquet", {"date": "2026-11-01"}),
        ("daily/{date}.parquet", "daily/2026-11-01.csv", None),
        ("daily/{date}.parquet", "daily/old/2026-11-01.parquet", None),  # one segment only
        ("daily/{date}.parquet", "daily/.parquet", None),  # a field is never empty
        ("daily/{date}.parquet", "hourly/2026-11-01.parquet", None),
        (
            "{region}/{date}/part.csv",
            "eu/2026-11-01/part.csv",
            {"region": "eu", "date": "2026-11-01"},
        ),
        ("{date}-{part}.parquet", "2026-11-01-3.parquet", {"date": "2026", "part": "11-01-3"}),
        ("{name}.x", "a.x.x", {"name": "a.x"}),  # the last literal ends the segment
        ("in/{file}", "in/a.b.c", {"file": "a.b.c"}),
        ("{{raw}}/{day}", "{raw}/mon", {"day": "mon"}),
        ("a{x}b{y}", "aXbYb", {"x": "X", "y": "Yb"}),
        ("a{x}b{y}", "ab", None),
    ],
)
def test_fields_of_a_name(template: str, name: str, fields) -> None:
    assert NameTemplate(template).fields_of(name) == fields


def test_literal_prefix_narrows_a_listing() -> None:
    assert NameTemplate("daily/{date}.parquet").literal_prefix == "daily/"
    assert NameTemplate("raw/x{{/{d}").literal_prefix == "raw/x{/"
    assert NameTemplate("{d}/x").literal_prefix == ""


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("daily/all.parquet", "has no {field}"),
        ("{a}{b}.csv", "{a} and {b} have nothing between them"),
        ("{a}/{a}", "names a more than once"),
        ("{date:%Y}", "is not a field"),
        ("{0}", "is not a field"),
        ("{date", "name template '{date'"),
    ],
)
def test_templates_that_cannot_be_read_are_refused(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        NameTemplate(template)


def test_a_hostile_name_is_read_in_linear_time() -> None:
    template = NameTemplate("{a}-{b}-{c}-{d}.parquet")
    name = "-" * 200_000 + "x"
    started = time.perf_counter()
    assert template.fields_of(name) is None
    assert time.perf_counter() - started < 1.0
