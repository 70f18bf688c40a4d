"""The rules sensors wait by (``natsobj.orchestration.sensing``), fed records and a clock by hand:
every face's poke and trigger hands them the records a listing or the change feed delivered."""

from __future__ import annotations

import pytest

from natsobj.errors import PrefixChanged
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.orchestration.sensing import AllPresent, QuietPrefix

pytestmark = pytest.mark.unit


def record(name: str, sequence: int, *, deleted: bool = False, size: int = 1) -> ObjectInfo:
    return ObjectInfo(name=name, bucket="b", sequence=sequence, deleted=deleted, size=size)


# -- several names or patterns at once --------------------------------------------------------


def test_all_present_needs_every_matcher_and_follows_deletes() -> None:
    present = AllPresent(NameMatcher.all_from_options(glob=["in/*.csv", "in/*.json"]))
    present.observe(record("in/a.csv", 1))
    assert present.found() is None
    assert [m.pattern for m in present.missing()] == ["in/*.json"]
    present.observe(record("in/m.json", 2))
    assert [i.name for i in present.found() or []] == ["in/a.csv", "in/m.json"]
    present.observe(record("in/a.csv", 3, deleted=True))  # gone again: not all there
    assert present.found() is None
    present.observe(record("in/b.csv", 4))
    present.observe(record("in/a.csv", 5))
    # the earliest live candidate of each matcher, in the matchers' order
    assert [i.sequence for i in present.found() or []] == [4, 2]


def test_all_present_skips_what_accept_refuses_and_a_record_replaces_its_name() -> None:
    present = AllPresent(
        NameMatcher.all_from_options(name=["x", "y"]), accept=lambda i: i.size >= 2
    )
    present.observe(record("x", 1, size=5))
    present.observe(record("y", 2, size=1))
    assert present.found() is None
    present.observe(record("y", 3, size=2))
    assert [i.sequence for i in present.found() or []] == [1, 3]
    present.observe(record("x", 4, size=1))  # a new version refused: x no longer counts
    assert present.found() is None


def test_all_present_narrows_listings_to_the_common_prefix() -> None:
    matchers = NameMatcher.all_from_options(glob=["raw/2024/*.csv", "raw/2025/x", "raw/20*"])
    assert AllPresent(matchers).literal_prefix == "raw/20"
    assert AllPresent(NameMatcher.all_from_options(regex=["a", "b"])).literal_prefix == ""


def test_a_list_takes_one_kind_and_is_not_empty() -> None:
    with pytest.raises(ValueError, match="exactly one of name=, glob= or regex="):
        NameMatcher.all_from_options(name=["a"], glob=["*"])
    with pytest.raises(ValueError, match="glob= is an empty list"):
        NameMatcher.all_from_options(glob=[])
    with pytest.raises(ValueError, match="invalid regex"):
        NameMatcher.all_from_options(regex=["ok", "("])
    assert NameMatcher.all_from_options(name="one") == [NameMatcher("one")]


# -- a quiet prefix ---------------------------------------------------------------------------


def quiet(**options) -> QuietPrefix:
    return QuietPrefix("b", "batch/", inactivity_period=10, now=0.0, **options)


def test_quiet_after_the_period_with_enough_objects_and_each_change_restarts_it() -> None:
    prefix = quiet(min_objects=2)
    assert prefix.seen([record("batch/1", 1), record("other/x", 2)], now=0.0)
    assert not prefix.is_quiet(20.0)  # quiet, but one object is fewer than min_objects
    assert prefix.observe(record("batch/2", 3), now=25.0)
    assert prefix.quiet_at == 35.0 and not prefix.is_quiet(34.9) and prefix.is_quiet(35.0)
    assert prefix.observe(record("batch/2", 4), now=30.0)  # put again: activity too
    assert not prefix.observe(record("batch/2", 4), now=31.0)  # the same record seen again
    assert not prefix.observe(record("elsewhere", 5), now=32.0)
    assert prefix.quiet_at == 40.0 and prefix.is_quiet(40.0)


def test_a_listing_finds_new_replaced_and_missing_names() -> None:
    prefix = quiet()
    prefix.seen([record("batch/1", 1), record("batch/2", 2)], now=0.0)
    assert not prefix.seen([record("batch/1", 1), record("batch/2", 2)], now=5.0)
    assert prefix.quiet_at == 10.0
    assert prefix.seen([record("batch/1", 1), record("batch/2", 7)], now=6.0)
    assert prefix.seen([record("batch/1", 1)], now=8.0)
    assert prefix.quiet_at == 18.0 and set(prefix.present) == {"batch/1"}


def test_previous_objects_count_as_there_and_their_loss_as_a_delete() -> None:
    prefix = quiet(previous_objects=["batch/1"])
    assert not prefix.seen([record("batch/1", 1)], now=3.0)  # known already: no change
    assert prefix.quiet_at == 10.0

    strict = quiet(previous_objects=["batch/1", "batch/2"], allow_delete=False)
    with pytest.raises(PrefixChanged, match=r"prefix 'batch/' were deleted.*'batch/2'") as err:
        strict.seen([record("batch/1", 1)], now=1.0)
    assert err.value.bucket == "b" and "allow_delete=True" in str(err.value)


def test_a_delete_is_activity_unless_deletes_are_refused() -> None:
    prefix = quiet()
    prefix.seen([record("batch/1", 1)], now=0.0)
    assert not prefix.observe(record("batch/9", 2, deleted=True), now=4.0)  # never there
    assert prefix.observe(record("batch/1", 3, deleted=True), now=5.0)
    assert prefix.present == {} and prefix.quiet_at == 15.0

    strict = quiet(allow_delete=False)
    strict.seen([record("batch/1", 1)], now=0.0)
    with pytest.raises(PrefixChanged):
        strict.observe(record("batch/1", 2, deleted=True), now=1.0)


def test_bad_quiet_options_are_refused() -> None:
    with pytest.raises(ValueError, match="inactivity_period must be non-negative"):
        QuietPrefix("b", "p", inactivity_period=-1, now=0.0)
    with pytest.raises(ValueError, match="min_objects must be non-negative"):
        QuietPrefix("b", "p", inactivity_period=1, min_objects=-1, now=0.0)
