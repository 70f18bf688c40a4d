"""Bad input from users and from other writers: property tests and raw corruption."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import natsobj
import natsobj.aio
from natsobj.names import encode_name
from natsobj.sync import run

utf8_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
quick = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@quick
@given(
    name=utf8_text,
    headers=st.dictionaries(utf8_text, st.lists(utf8_text, min_size=1, max_size=3), max_size=3),
    metadata=st.dictionaries(utf8_text, st.text(max_size=20), max_size=3),
    description=st.text(max_size=30),
)
def test_any_utf8_name_headers_and_metadata_round_trip(store, name, headers, metadata, description):
    info = store.put(
        name, name.encode(), headers=headers, metadata=metadata, description=description
    )
    got = store.get_info(name)
    assert (got.name, got.headers, got.metadata, got.description) == (
        name,
        headers,
        metadata,
        description,
    )
    assert store.get_bytes(name) == name.encode()
    assert got.nuid == info.nuid


@quick
@given(bucket=st.text(max_size=20).filter(lambda s: not re.fullmatch(r"[A-Za-z0-9_-]+", s)))
def test_invalid_bucket_names_are_rejected_before_anything_is_sent(nats_url, bucket):
    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        await client.nc.close()  # nothing could be sent now: the check must come first
        for call in (client.create_store, client.store, client.delete_store):
            with pytest.raises(natsobj.BadBucketName, match="A-Z"):
                await call(bucket)

    run(body())


def test_corrupted_meta_gives_bad_object_meta_and_list_skips_it(store, raw, caplog):
    store.put("fine", b"ok")
    raw.publish(
        f"$O.{store.bucket}.M.{encode_name('broken')}", b"{not json", {"Nats-Rollup": "sub"}
    )
    raw.publish(f"$O.{store.bucket}.M.{encode_name('odd')}", json.dumps([1, 2]).encode())
    with pytest.raises(natsobj.BadObjectMeta, match=store.bucket):
        store.get_info("broken")
    with caplog.at_level(logging.WARNING, logger="natsobj"):
        assert [i.name for i in store.list()] == ["fine"]
    assert sum("unreadable meta record" in r.getMessage() for r in caplog.records) == 2
    with store.watch() as watcher:  # a watch skips it too, and does not hang
        assert watcher.next(5).name == "fine"
        assert watcher.next(0.3) is None


def test_chunk_altered_on_the_server_is_a_digest_mismatch(store, raw, tmp_path):
    info = store.put("victim", os.urandom(300_000))
    raw.publish(f"$O.{store.bucket}.C.{info.nuid}", b"injected")  # an extra, foreign chunk
    # replace the chunks entirely with same-sized tampered data
    tampered = store.put("tampered", os.urandom(300_000))
    run(store.aio.bucket_stream.purge(f"$O.{store.bucket}.C.{tampered.nuid}"))
    for _ in range(tampered.chunks - 1):
        raw.publish(f"$O.{store.bucket}.C.{tampered.nuid}", b"\0" * 128 * 1024)
    raw.publish(f"$O.{store.bucket}.C.{tampered.nuid}", b"\0" * (300_000 - 2 * 128 * 1024))
    for name in ("tampered",):
        target = tmp_path / f"{name}.bin"
        with pytest.raises(natsobj.DigestMismatch, match=name):
            store.get_file(name, target)
        assert list(tmp_path.iterdir()) == []  # no destination file, no temporary file
        with pytest.raises(natsobj.DigestMismatch):
            store.get_bytes(name)
    # the extra chunk after a valid object is detected as well
    with pytest.raises(natsobj.DigestMismatch):
        run(_read_all_chunks(store.aio, "victim"))


async def _read_all_chunks(store: natsobj.aio.ObjectStore, name: str) -> None:
    from natsobj.aio.jetstream.consumer import OrderedConsumer

    info = await store.get_info(name)
    consumer = OrderedConsumer(
        store.api, store.stream, f"$O.{store.bucket}.C.{info.nuid}", stop_when_idle=True
    )
    pending = await consumer.start()
    await consumer.close()
    if pending != info.chunks:
        raise natsobj.DigestMismatch(f"{pending} chunks stored, {info.chunks} recorded")


def test_links_written_without_nuid_by_other_clients(store, raw):
    store.put("target", b"pointed at")
    js_style_link = {
        "name": "js-link",
        "bucket": store.bucket,
        "options": {"link": {"bucket": store.bucket, "name": "target"}},
    }
    raw.publish(
        f"$O.{store.bucket}.M.{encode_name('js-link')}",
        json.dumps(js_style_link).encode(),
        {"Nats-Rollup": "sub"},
    )
    assert store.get_info("js-link").link == natsobj.ObjectLink(store.bucket, "target")
    assert store.get_bytes("js-link") == b"pointed at"
    no_nuid_object = {"name": "no-nuid", "bucket": store.bucket, "size": 10, "chunks": 1}
    raw.publish(
        f"$O.{store.bucket}.M.{encode_name('no-nuid')}", json.dumps(no_nuid_object).encode()
    )
    with pytest.raises(natsobj.BadObjectMeta, match="no nuid"):
        store.get_bytes("no-nuid")


def test_cancelled_put_leaves_nothing(nats_url, bucket_name, raw):
    async def body() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            store = await client.create_store(bucket_name)
            await store.put("survivor", b"previous")

            async def endless():
                while True:
                    yield os.urandom(64 * 1024)
                    await asyncio.sleep(0)

            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.put("survivor", endless()), 0.5)
            assert await store.get_bytes("survivor") == b"previous"
            await asyncio.sleep(0.5)  # the purge runs shielded from the cancellation
            info = await store.api.call(
                f"STREAM.INFO.{store.stream}", {"subjects_filter": f"$O.{bucket_name}.C.>"}
            )
            assert len(info["state"].get("subjects") or {}) == 1
            await client.delete_store(bucket_name)

    run(body())
