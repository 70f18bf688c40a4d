"""The manifest's record of committed micro-batches, without Spark: it survives later batch
appends and overwrites and the JSON round trip, so a replay is recognised whatever came after."""

from __future__ import annotations

from natsobj.spark.manifest import Manifest, Part, next_generation

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False}]}


def commit(previous, name, *, overwrite=False, stream=None):
    manifest, _ = next_generation(
        previous,
        prefix="p",
        schema=SCHEMA,
        parts=[Part(name, 1, 10, "SHA-256=x")],
        overwrite=overwrite,
        write_id=name,
        retain=1,
        stream=stream,
    )
    return manifest


def test_committed_batches_are_kept_per_query_across_generations() -> None:
    g1 = commit(None, "a", stream=("q1", 0))
    assert g1.committed_batch("q1") == 0 and g1.committed_batch("q2") == -1
    g2 = commit(g1, "b", stream=("q2", 5))
    g3 = commit(g2, "c")  # a plain batch append keeps the record
    g4 = commit(g3, "d", overwrite=True, stream=("q1", 1))  # complete mode
    assert g4.streams == {"q1": 1, "q2": 5}
    assert [p.name for p in g4.parts] == ["d"]
    again = Manifest.from_json(g4.to_json(), bucket="b", name="p/_manifest.json")
    assert again.streams == {"q1": 1, "q2": 5} and again == g4


def test_manifests_written_before_streaming_still_load() -> None:
    old = commit(None, "a")
    doc = old.to_json().replace(b'"streams": {}', b'"unused": {}')
    assert b'"streams"' not in doc
    assert Manifest.from_json(doc, bucket="b", name="p/_manifest.json").streams == {}
