"""JSON-native values are stored as JSON, so an untyped input loads them with no pickle and no
signing key (issue 31); every other value stays a pickle instead of coming back changed."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict

import pytest
from dagster import asset, materialize

from natsobj.orchestration.json_values import MAX_DEPTH, BadJsonValue, read_json

NESTED = {
    "counts": [1, 2, 3],
    "mean": 2.5,
    "big": 2**70,
    "ok": True,
    "none": None,
    "names": ["Oslo", "Zürich", "\ud800 lone surrogate"],
    "deep": {"a": [{"b": [[], {}]}]},
}


class Level(enum.IntEnum):
    LOW = 1


def _failure(result) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    return "\n".join(e.message for e in [error, *([error.cause] if error.cause else [])])


def test_an_untyped_input_loads_dicts_and_lists_without_pickle_or_key(io_manager, bucket_store):
    @asset
    def numbers() -> dict:  # annotated like S3PickleIOManager users write it
        return NESTED

    @asset
    def readings():  # not annotated: the value decides
        return [1, 2.0, False, None, "x"]

    @asset
    def flag() -> bool:
        return True

    @asset
    def total(numbers, readings, flag):  # untyped inputs, no signing key configured
        return {"numbers": numbers, "readings": readings, "flag": flag}

    @asset
    def typed(numbers: dict, readings: list) -> int:  # annotations that ask for a pickle
        return len(numbers) + len(readings)

    result = materialize(
        [numbers, readings, flag, total, typed], resources={"io_manager": io_manager}
    )
    assert result.success
    loaded = result.output_for_node("total")
    assert loaded == {"numbers": NESTED, "readings": [1, 2.0, False, None, "x"], "flag": True}
    assert type(loaded["readings"][1]) is float and type(loaded["readings"][2]) is bool
    assert result.output_for_node("typed") == len(NESTED) + 5
    for name, value in (("numbers", NESTED), ("readings", loaded["readings"]), ("flag", True)):
        info = bucket_store.get_info(f"pipe/{name}")
        assert info.metadata["natsobj.format"] == "json"
        assert info.metadata["natsobj.type"] == "json"
        assert info.headers["Content-Type"] == ["application/json"]
        assert "natsobj.hmac" not in info.metadata
        data = bucket_store.get_bytes(f"pipe/{name}")
        assert not data.startswith(b"\x80")  # no pickle protocol header
        assert json.loads(data) == value  # plain JSON any reader takes
    [mat] = result.asset_materializations_for_node("numbers")
    assert mat.metadata["format"].value == "json"


def test_values_json_would_change_stay_pickles(io_manager, signed_io_manager, bucket_store):
    shared = [1]
    changed = {
        "a_tuple": (1, 2),
        "int_keys": {1: "one"},
        "nan": math.nan,
        "infinity": [math.inf],
        "int_enum": Level.LOW,
        "ordered": OrderedDict(a=1),
        "nested_tuple": {"x": [1, (2, 3)]},
        "a_set": {"s": {1}},
        "shared": {"x": shared, "y": shared},
    }
    assets = [_producer(name, value) for name, value in changed.items()]

    @asset
    def echo(a_tuple, int_keys, nan, infinity, int_enum, ordered, nested_tuple, a_set, shared):
        return [a_tuple, int_keys, nan, infinity, int_enum, ordered, nested_tuple, a_set, shared]

    # With a key, each loads back as it was, of the same types: it was pickled.
    result = materialize([*assets, echo], resources={"io_manager": signed_io_manager})
    assert result.success
    (a_tuple, int_keys, nan, infinity, int_enum, ordered, nested, a_set, both) = (
        result.output_for_node("echo")
    )
    assert a_tuple == (1, 2) and int_keys == {1: "one"} and math.isnan(nan)
    assert infinity == [math.inf] and type(int_enum) is Level and type(ordered) is OrderedDict
    assert nested == {"x": [1, (2, 3)]} and a_set == {"s": {1}}
    assert both["x"] is both["y"]
    for name in changed:
        assert bucket_store.get_info(f"pipe/{name}").metadata["natsobj.format"] == "pickle"

    # Without a key an untyped input still refuses them, as it refuses every pickle.
    @asset
    def untyped(a_tuple):
        raise AssertionError("must not be reached")

    result = materialize(
        [*assets, untyped],
        selection=[untyped],
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )
    assert not result.success
    assert "does not unpickle because of what a stored object says" in _failure(result)


def test_the_deepest_json_nesting_round_trips(io_manager, bucket_store):
    deepest = _nested(MAX_DEPTH)
    producer = _producer("deepest", deepest)

    @asset
    def echo(deepest):
        return deepest

    result = materialize([producer, echo], resources={"io_manager": io_manager})
    assert result.output_for_node("echo") == deepest
    assert bucket_store.get_info("pipe/deepest").metadata["natsobj.format"] == "json"


def _nested(depth: int) -> list:
    """A list ``depth`` containers deep."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _producer(name: str, value: object):
    @asset(name=name)
    def produce():
        return value

    return produce


def test_an_int_too_long_for_json_text_takes_the_pickle_path(signed_io_manager, bucket_store):
    """Issue 39, finding 17: a value JSON could hold but Python will not write as text (an int
    past ``sys.get_int_max_str_digits``) failed the output with ValueError."""
    huge = 10**5000

    @asset
    def long_int():
        return {"n": huge}

    @asset
    def echo(long_int) -> bool:
        return long_int == {"n": huge}

    result = materialize([long_int, echo], resources={"io_manager": signed_io_manager})
    assert result.success
    assert result.output_for_node("echo") is True
    assert bucket_store.get_info("pipe/long_int").metadata["natsobj.type"] == "object"  # a pickle


def test_a_value_too_deep_for_pickle_fails_with_a_typed_error(io_manager, bucket_store):
    """A 200,000-deep list is no JSON (past MAX_DEPTH) and too deep to pickle: the output fails
    with TooDeep, saying so, not a bare RecursionError."""
    deep: list = []
    for _ in range(200_000):
        deep = [deep]

    @asset
    def nested():
        return deep

    result = materialize([nested], resources={"io_manager": io_manager}, raise_on_error=False)
    assert not result.success
    assert "nests deeper than pickle recurses" in _failure(result)
    assert "RecursionError" not in _failure(result)


def test_a_planted_json_too_deep_to_parse_is_a_typed_error(tmp_path):
    """A writer of the bucket stores a 200,000-deep JSON array as a JSON value: reading it is
    BadJsonValue (a ValueError too), not a bare RecursionError."""
    path = tmp_path / "value"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(BadJsonValue, match="nests deeper"):
        read_json(path)
    path.write_text("1" * 5000)
    with pytest.raises(BadJsonValue, match="cannot be read"):
        read_json(path)
