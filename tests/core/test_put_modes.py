"""Put-if-absent, the one rule every face that creates without overwriting uses
(``natsobj.aio.put_modes``): the compare-and-swap put expects 0 for a name never written, the
tombstone's sequence for a deleted one, and an object there is ObjectExists."""

from __future__ import annotations

import pytest

import natsobj
from natsobj.aio.put_modes import CREATE, PutMode, create_sequence
from natsobj.errors import ObjectChanged
from natsobj.spark.storage import manifest_for_update
from natsobj.sync import run


def test_create_sequence_never_written_deleted_and_existing(store) -> None:
    assert run(create_sequence(store.aio, "new")) == 0
    first = store.put("new", b"one", mode=PutMode.update(run(create_sequence(store.aio, "new"))))
    with pytest.raises(natsobj.ObjectExists, match=f"bucket {store.bucket!r}, object 'new'"):
        run(create_sequence(store.aio, "new"))
    store.delete("new")
    tombstone = store.get_info("new", include_deleted=True).sequence
    assert tombstone is not None and tombstone > (first.sequence or 0)
    assert run(create_sequence(store.aio, "new")) == tombstone
    store.put("new", b"again", mode=PutMode.update(tombstone))
    assert store.get_bytes("new") == b"again"


def test_a_writer_creating_the_name_after_the_look_up_makes_the_put_fail(store) -> None:
    expected = run(create_sequence(store.aio, "raced"))
    store.put("raced", b"theirs")
    with pytest.raises(natsobj.ObjectChanged):
        store.put("raced", b"ours", mode=PutMode.update(expected))
    assert store.get_bytes("raced") == b"theirs"


def test_put_if_absent_creates_never_overwrites_and_reuses_a_deleted_name(store) -> None:
    """The put mode the faces call (``put(mode=CREATE)``, S3's ``If-None-Match: *``)."""
    store.put("p", b"first", mode=CREATE)
    with pytest.raises(natsobj.ObjectExists):
        store.put("p", b"second", mode=CREATE)
    assert store.get_bytes("p") == b"first"
    store.delete("p")
    store.put("p", b"third", mode=CREATE)
    assert store.get_bytes("p") == b"third"


def test_the_keywords_before_put_mode_still_work_and_warn(store) -> None:
    """``expected_sequence=`` and ``if_absent=`` were the put's mode before ``PutMode``: one
    release with a DeprecationWarning, the same rule behind them."""
    with pytest.warns(DeprecationWarning, match="mode=CREATE"):
        created = store.put("old", b"one", if_absent=True)
    with pytest.warns(DeprecationWarning), pytest.raises(natsobj.ObjectExists):
        store.put("old", b"two", if_absent=True)
    with pytest.warns(DeprecationWarning):
        store.put("old", b"three", expected_sequence=created.sequence)
    assert store.get_bytes("old") == b"three"
    with pytest.raises(ValueError, match="one of mode"):
        store.put("q", b"x", if_absent=True, expected_sequence=0)
    with pytest.raises(ValueError, match="one of mode"):
        store.put("q", b"x", mode=CREATE, expected_sequence=0)
    with pytest.raises(ValueError, match="sequence >= 0"):
        PutMode.update(-1)


def test_replacing_a_read_version_swaps_exactly_it(store) -> None:
    """``PutMode.replacing(info)``: the version a reader saw, never "create only" for a
    record without a sequence (the gateway's conditions, lifecycle restamps and restates)."""
    first = store.put("r", b"one")
    read = store.get_info("r")
    store.put("r", b"two", mode=PutMode.replacing(read))
    with pytest.raises(ObjectChanged):
        store.put("r", b"three", mode=PutMode.replacing(read))
    assert store.get_bytes("r") == b"two"
    first.sequence = None
    with pytest.raises(ValueError, match="needs its sequence"):
        PutMode.replacing(first)


def test_a_spark_commit_creates_its_manifest_by_the_same_rule(store) -> None:
    """The commit's put expects the manifest it read, or creates one by the core's rule:
    over a deleted manifest (a dataset removed with `natsobj rm -r`) too."""
    assert manifest_for_update(store, "ds") == (None, 0)
    store.put("ds/_manifest.json", b"{}")
    store.delete("ds/_manifest.json")
    tombstone = store.get_info("ds/_manifest.json", include_deleted=True).sequence
    assert manifest_for_update(store, "ds") == (None, tombstone)
