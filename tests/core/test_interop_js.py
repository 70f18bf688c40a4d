"""The official JavaScript client (@nats-io/obj) as a real peer, through tests/interop_js."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import natsobj

PEER = Path(__file__).parents[1] / "interop_js"


@pytest.fixture(params=["unversioned", "versioned"])
def store(store, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Every exchange runs on a bucket keeping versions too (docs/versioning.md): nats.js sees
    and writes the current versions as in one that keeps none."""
    if request.param == "versioned":
        store.set_versioning("Enabled")
    return store


def js(op: str, url: str, bucket: str, *args: str, prefixes: tuple[str, str] | None = None):
    """Run one peer operation; ``prefixes`` is (API prefix, inbox prefix) across accounts."""
    node = shutil.which("node")
    assert node, "Node.js is required for the JavaScript interop tests"
    env = dict(os.environ)
    if prefixes:
        env["NATS_JS_API_PREFIX"], env["NATS_INBOX_PREFIX"] = prefixes
    result = subprocess.run(
        [node, str(PEER / "peer.mjs"), op, url, bucket, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PEER,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_javascript_reads_what_we_write(nats_url, store, tmp_path: Path):
    data = os.urandom(700_000)
    ours = store.put("for-js", data, metadata={"k": "v"}, description="from python")
    info = js("get", nats_url, store.bucket, "for-js", str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == data  # nats.js verified the digest too
    assert info["digest"] == ours.digest and info["size"] == len(data)
    assert info["metadata"] == {"k": "v"} and info["description"] == "from python"
    store.put("empty", b"")
    js("get", nats_url, store.bucket, "empty", str(tmp_path / "empty.bin"))
    assert (tmp_path / "empty.bin").read_bytes() == b""
    store.add_link("our-link", store.get_info("for-js"))
    js("get", nats_url, store.bucket, "our-link", str(tmp_path / "via-link.bin"))
    assert (tmp_path / "via-link.bin").read_bytes() == data
    assert sorted(js("list", nats_url, store.bucket)) == ["empty", "for-js", "our-link"]


def test_javascript_reads_an_atomic_put(nats_url, store, tmp_path: Path):
    """An object written as one ADR-50 batch (natsobj.aio.atomic_put) is an ordinary object
    to nats.js: the batch headers on its messages change nothing for a reader."""
    store.aio.atomic_max_bytes = 1 << 40
    data = os.urandom(700_000)
    ours = store.put("atomic", data, metadata={"k": "v"})
    assert store.get_info("atomic").sequence == ours.sequence == ours.chunks + 1  # one batch
    info = js("get", nats_url, store.bucket, "atomic", str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == data  # nats.js verified the digest too
    assert info["digest"] == ours.digest and info["size"] == len(data)
    store.put("atomic", b"second version")
    js("get", nats_url, store.bucket, "atomic", str(tmp_path / "again.bin"))
    assert (tmp_path / "again.bin").read_bytes() == b"second version"


def test_we_read_what_javascript_writes(nats_url, store, tmp_path: Path):
    data = os.urandom(500_000)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    written = js("put", nats_url, store.bucket, "from-js", str(source))
    info = store.get_info("from-js")
    assert info.digest == written["digest"] and info.size == len(data)
    assert info.description == "written by nats.js"
    assert store.get_bytes("from-js") == data
    link = js("link", nats_url, store.bucket, "js-link", "from-js")
    linked = store.get_info("js-link")
    assert linked.link == natsobj.ObjectLink(store.bucket, "from-js")
    assert linked.nuid == link.get("nuid", "")  # nats.js may write links without a nuid
    assert store.get_bytes("js-link") == data
    js("delete", nats_url, store.bucket, "from-js")
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("from-js")


def test_javascript_reads_an_expiring_object_before_it_expires(
    nats_url, sync_client, bucket_name: str, tmp_path: Path
):
    """An object put with a TTL (issue 23) is an ordinary object to nats.js until it expires:
    the Nats-TTL headers change nothing for a reader. Once it expired, nats.js lists it no
    more and cannot get it."""
    store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    try:
        data = os.urandom(400_000)
        ours = store.put("expiring", data, ttl=2)
        store.put("kept", b"k")
        info = js("get", nats_url, bucket_name, "expiring", str(tmp_path / "out.bin"))
        assert (tmp_path / "out.bin").read_bytes() == data  # nats.js verified the digest too
        assert info["digest"] == ours.digest and info["size"] == len(data)
        assert sorted(js("list", nats_url, bucket_name)) == ["expiring", "kept"]
        time.sleep(2.5)
        assert js("list", nats_url, bucket_name) == ["kept"]
        node = shutil.which("node")
        assert node
        gone = subprocess.run(
            [node, str(PEER / "peer.mjs"), "get", nats_url, bucket_name, "expiring", "/dev/null"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=PEER,
        )
        assert gone.returncode != 0
    finally:
        sync_client.delete_store(bucket_name)
