"""Option ``superseded_ttl``: the parts an overwrite supersedes expire on the server after that
long, instead of being deleted by a later commit; a reader planned on the old generation
keeps reading it meanwhile however many commits follow; and the trust rule holds (an edited
manifest cannot get another dataset's object an expiry)."""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime, timedelta

import pytest

from natsobj.spark.manifest import Manifest, Part, expiring, next_generation, retained_name

PREFIX = "lake/events"
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False}]}


def _commit(previous, names, *, overwrite, ttl=None, retain=1):
    return next_generation(
        previous,
        prefix="p",
        schema=SCHEMA,
        parts=[Part(n, 1, 10, "SHA-256=x") for n in names],
        overwrite=overwrite,
        write_id="w",
        retain=retain,
        superseded_ttl=ttl,
    )


def test_superseded_parts_expire_by_ttl_and_no_commit_before_then_deletes_them() -> None:
    ttl = timedelta(hours=1)
    g1, _ = _commit(None, ["a"], overwrite=True, ttl=ttl)
    g2, doomed = _commit(g1, ["b"], overwrite=True, ttl=ttl, retain=0)
    assert doomed == [] and expiring(g2) == ("a",)
    (retained,) = g2.retained
    left = datetime.fromisoformat(retained.expires_at) - datetime.now(UTC)
    assert ttl - timedelta(minutes=1) < left <= ttl
    g3, doomed = _commit(g2, ["c"], overwrite=False, ttl=ttl, retain=0)
    assert doomed == [] and expiring(g3) == ()  # an append supersedes nothing
    assert [r.parts for r in g3.retained] == [("a",)]  # listed until it expires
    again = Manifest.from_json(g3.to_json(), bucket="b", name="p/_manifest.json")
    assert again == g3


def test_an_expired_entry_leaves_the_manifest_and_old_entries_keep_their_rule() -> None:
    g1, _ = _commit(None, ["a"], overwrite=True)
    g2, _ = _commit(g1, ["b"], overwrite=True, retain=5)  # no TTL: deleted by generation
    doc = json.loads(g2.to_json())
    g3, _ = _commit(
        Manifest.from_json(json.dumps(doc).encode(), bucket="b", name="m"),
        ["c"],
        overwrite=True,
        ttl=timedelta(seconds=30),
        retain=5,
    )
    assert [(r.generation, bool(r.expires_at)) for r in g3.retained] == [(2, True), (1, False)]
    doc = json.loads(g3.to_json())
    doc["retained"][0]["expires_at"] = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    g4, doomed = _commit(
        Manifest.from_json(json.dumps(doc).encode(), bucket="b", name="m"),
        ["d"],
        overwrite=False,
        retain=1,
    )
    # generation 2's parts are past their expiry: listed no more, and deleted in case the
    # server has not (a part its commit could not give the TTL); generation 1's (no TTL,
    # now 3 generations old) are deleted as before
    assert [r.generation for r in g4.retained] == []
    assert doomed == ["a", "b"]


def _write(spark, options, mode: str, start: int, end: int, **extra) -> None:
    df = spark.range(start, end, numPartitions=2)
    df.write.format("natsobj").mode(mode).options(**options, **extra).save(PREFIX)


def _ttl_outlasting_three_overwrites(spark, options) -> int:
    """Seconds of TTL that outlast three overwrites and a read on this machine: ten times one
    overwrite's time, at least 6 s. A fixed 6 s does not: PySpark 4.0's writes take longer
    than 4.3's (in Spark: neither starts a Python worker), and a loaded machine stretches
    both past it."""
    probe = {**options, "retain_generations": "0", "superseded_ttl": "1h"}
    write = spark.range(0, 3, numPartitions=2).write.format("natsobj").options(**probe)
    write.mode("overwrite").save("lake/probe")
    started = time.monotonic()
    write.mode("overwrite").save("lake/probe")
    return max(6, math.ceil(10 * (time.monotonic() - started)))


def _parts(store) -> dict[str, object]:
    return {i.name: i for i in store.list() if i.name.endswith(".parquet")}


def test_superseded_generation_expires_on_the_server_and_old_readers_finish(
    spark, options, sync_client, bucket_name
) -> None:
    # The shortest TTL a bucket allows is its delete-marker TTL: 1 s here, so the test is quick.
    store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    try:
        _write(spark, options, "overwrite", 0, 1000)
        first = set(_parts(store))
        reader = spark.read.format("natsobj").options(**options).load(PREFIX)
        assert reader.rdd.getNumPartitions() == 2  # planned on generation 1
        ttl = _ttl_outlasting_three_overwrites(spark, options)

        # Three overwrites with no generations retained: without a TTL the third would have
        # deleted generation 1's parts under the planned reader.
        started = time.monotonic()
        for start in (2000, 3000, 4000):
            _write(
                spark,
                options,
                "overwrite",
                start,
                start + 3,
                retain_generations=0,
                superseded_ttl=f"{ttl}s",
            )
        parts = _parts(store)
        first = {retained_name(n) for n in first}  # moved out of the folder by the overwrite
        took = time.monotonic() - started
        assert first <= set(parts), f"gone after {took:.1f} s of a {ttl} s TTL"
        for name in first:
            assert parts[name].expires is not None, name
            assert parts[name].expires - datetime.now(UTC) <= timedelta(seconds=ttl)
        assert sorted(r.id for r in reader.collect()) == list(range(1000))
        manifest = json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))
        assert [r["generation"] for r in manifest["retained"]] == [3, 2, 1]
        assert all(r["expires_at"] for r in manifest["retained"])
        live = {p["name"] for p in manifest["parts"]}
        assert all(parts[name].expires is None for name in live)

        deadline = time.monotonic() + ttl + 90
        while set(_parts(store)) & first and time.monotonic() < deadline:
            time.sleep(1)
        assert not set(_parts(store)) & first, "generation 1's parts did not expire"
        assert set(_parts(store)) >= live
        df = spark.read.format("natsobj").options(**options).load(PREFIX)
        assert sorted(r.id for r in df.collect()) == [4000, 4001, 4002]
    finally:
        sync_client.delete_store(bucket_name)


def test_an_edited_manifest_cannot_give_another_datasets_object_a_ttl(
    spark, options, store
) -> None:
    victims = {
        "lake/other/part-00000-0-victim.parquet": b"another dataset's part",
        f"{PREFIX}/README.md": b"not a data object",
    }
    _write(spark, options, "overwrite", 0, 10)
    for name, data in victims.items():
        store.put(name, data)
    manifest_name = f"{PREFIX}/_manifest.json"
    doc = json.loads(store.get_bytes(manifest_name))
    doc["parts"] += [{"name": n, "rows": 0, "size": 1, "digest": "SHA-256=x"} for n in victims]
    store.put(manifest_name, json.dumps(doc).encode())

    _write(spark, options, "overwrite", 10, 20, superseded_ttl="1h")

    for name, data in victims.items():
        info = store.get_info(name)
        assert info.expires is None, name
        assert store.get_bytes(name) == data
    own = [n for n in doc["parts"] if n["name"] not in victims]
    assert own and all(store.get_info(retained_name(p["name"])).expires is not None for p in own)


@pytest.mark.parametrize("value", ["soon", "0.5s"])
def test_a_bad_superseded_ttl_fails_before_any_task(spark, options, store, value) -> None:
    with pytest.raises(Exception, match="superseded_ttl"):
        _write(spark, options, "overwrite", 0, 10, superseded_ttl=value)
    assert _parts(store) == {}


def test_a_complete_mode_streams_old_batches_expire_instead_of_being_deleted(
    spark, options, store, tmp_path
) -> None:
    from tests.spark.test_stream_query import land

    counts = (
        spark.readStream.format("natsobj")
        .options(**options, glob="landing/*.csv")
        .schema("obj INT, row INT")
        .load()
        .groupBy("obj")
        .count()
    )
    # Three batches, one per run of the query: every PySpark makes them so (before 4.2 a
    # batch takes every object there is, whatever maxObjectsPerTrigger says).
    for objects in (range(2), range(2, 4), range(4, 5)):
        land(store, objects)
        query = (
            counts.writeStream.format("natsobj")
            .outputMode("complete")
            .options(**options, retain_generations="0", superseded_ttl="1h")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start("agg/counts")
        )
        query.awaitTermination(600)
        assert query.exception() is None
    manifest = json.loads(store.get_bytes("agg/counts/_manifest.json"))
    assert manifest["generation"] == 3
    # batches 1 and 2 were superseded: still there (no retained generation would have kept
    # them), each part expiring in about an hour
    assert [r["generation"] for r in manifest["retained"]] == [2, 1]
    old = [n for r in manifest["retained"] for n in r["parts"]]
    assert old
    for name in old:
        left = store.get_info(name).expires - datetime.now(UTC)
        assert timedelta(minutes=55) < left <= timedelta(hours=1), name
    df = spark.read.format("natsobj").options(**options).load("agg/counts")
    assert sorted((r.obj, r["count"]) for r in df.collect()) == [(i, 50) for i in range(5)]
