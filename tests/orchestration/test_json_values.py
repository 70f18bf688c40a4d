"""The rule for values JSON holds exactly (natsobj.orchestration.json_values), shared by every
face."""

from __future__ import annotations

import enum
import math
from collections import OrderedDict, defaultdict
from pathlib import Path

import pytest

from natsobj.orchestration.json_values import MAX_DEPTH, is_json_native, read_json, write_json

pytestmark = pytest.mark.unit


class Level(enum.IntEnum):
    LOW = 1


class Name(str):
    pass


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**80),
        1.5,
        -0.0,
        "",
        "Zürich \ud800",
        [],
        {},
        {"a": [1, {"b": None, "c": [True, 2.5, "x"]}]},
        [[1], [1]],  # equal, not the same list
        _nested(MAX_DEPTH),
    ],
)
def test_json_native_values_round_trip_unchanged(value, tmp_path: Path) -> None:
    assert is_json_native(value)
    path = tmp_path / "v.json"
    write_json(value, path)
    back = read_json(path)
    assert back == value and repr(back) == repr(value)  # same types at every level


def _cycle() -> list:
    cycle: list = []
    cycle.append(cycle)
    return cycle


SHARED: list = [1]


@pytest.mark.parametrize(
    "value",
    [
        (1, 2),
        [1, (2,)],
        {1: "int key"},
        {("a",): 1},
        {"nan": math.nan},
        [math.inf],
        -math.inf,
        Level.LOW,
        Name("a str subclass"),
        OrderedDict(a=1),
        defaultdict(list),
        {"s": {1, 2}},
        b"bytes",
        [SHARED, SHARED],
        _cycle(),
        _nested(MAX_DEPTH + 1),
        object(),
    ],
)
def test_values_json_would_change_are_not_json_native(value) -> None:
    assert not is_json_native(value)


def test_non_json_constants_are_refused_on_read(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_text('{"x": NaN}')
    with pytest.raises(ValueError, match="NaN is not JSON"):
        read_json(path)
