"""Generated malformed meta records against every path that reads or replaces them.

Each example publishes one record with nats-py (wrong types, huge values, NaN and Infinity,
wildcard tokens, missing fields, names that do not decode, payloads that are not JSON) and
drives ``list``, ``iter_list``, ``get_info``, ``get``, ``changes``, ``watch``, ``status`` and
``delete`` over the bucket. Nothing may raise anything but natsobj's typed errors, the other
objects keep every chunk and byte, and the bucket stays usable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import natsobj
from natsobj.model import digest_of
from natsobj.names import encode_name

T = TypeVar("T")
GOOD = {"good/one": os.urandom(300_000), "good/two": b"small"}
FIELDS = [
    "name",
    "bucket",
    "nuid",
    "size",
    "chunks",
    "digest",
    "deleted",
    "description",
    "headers",
    "metadata",
    "options",
    "natsobj_tiering",
]

hostile_text = st.one_of(
    st.sampled_from([">", "*", "a.>", "a b", "", "\x00", "\r\nPUB x 1", "\ud800", "x" * 100_000]),
    st.text(max_size=12),
)
hostile_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
)
hostile = st.recursive(
    hostile_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
nested = st.sampled_from(["link", "max_chunk_size", "offload", "replaces", "mtime"])
not_json = st.sampled_from([b"{not json", b"[" * 5000, b"\xff\xfe{}", b"", b"null", b"1e999"])


@st.composite
def payloads(draw: st.DrawFn, bucket: str) -> bytes:
    """A record that starts out valid and has one to three fields removed or replaced."""
    if draw(st.integers(0, 9)) == 0:
        return draw(not_json | st.binary(max_size=40))
    record: dict[str, Any] = {
        "name": "bad",
        "bucket": bucket,
        "nuid": "BADNUID",
        "size": 5,
        "chunks": 1,
        "digest": digest_of(b"hello"),
    }
    for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True)):
        choice = draw(st.integers(0, 2))
        if choice == 0:
            record.pop(field, None)
        elif choice == 1 and field in ("options", "natsobj_tiering"):
            record[field] = {draw(nested): draw(hostile)}
        else:
            record[field] = draw(hostile)
    return json.dumps(record).encode()  # NaN and Infinity as Python writes them


def typed(call: Callable[[], T]) -> T | None:
    """The call's result, or None for one of natsobj's typed errors; anything else fails."""
    try:
        return call()
    except natsobj.NatsObjError:
        return None


quick = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@quick
@given(data=st.data(), undecodable=st.integers(0, 5))
def test_malformed_records_cost_no_other_object_and_the_bucket_stays_usable(
    store, raw, data, undecodable
):
    good = {name: store.put(name, payload) for name, payload in GOOD.items()}
    token = "not-base64!" if undecodable == 0 else encode_name("bad")
    payload = data.draw(payloads(store.bucket))
    raw.publish(f"$O.{store.bucket}.M.{token}", payload, {"Nats-Rollup": "sub"})

    for listing in (store.list, lambda: list(store.iter_list())):
        listed = {info.name: info for info in listing()}
        assert {name: listed[name].nuid for name in GOOD} == {
            name: info.nuid for name, info in good.items()
        }
    typed(lambda: store.get_info("bad"))
    typed(lambda: store.get_bytes("bad"))
    typed(lambda: store.get_bytes("bad", allow_missing_digest=True))
    assert store.status(count_offloaded=True).bucket == store.bucket
    changed = {info.name for info in store.changes(0, limit=10_000)}
    assert set(GOOD) <= changed
    seen = set()
    with store.watch() as watcher:
        while (info := watcher.next(2 if not seen else 0.2)) is not None:
            seen.add(info.name)
    assert set(GOOD) <= seen
    typed(lambda: store.delete("bad"))

    for name, info in good.items():
        assert raw.subject_count(store.bucket, f"$O.{store.bucket}.C.{info.nuid}") == info.chunks
        assert store.get_bytes(name) == GOOD[name]
    store.put("after", payload or b"-")
    assert store.get_bytes("after") == (payload or b"-")
