"""Trust boundaries of the archive (issue 21, points 5 and 15), against moto's S3 server, a
real nats-server and, for the attacker, a plain HTTP listener on loopback.

5: a meta record (which any writer of the bucket may publish) never chooses where a reader's
   signed S3 requests go. 15: restore refuses what ``verify`` refuses, and writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fsspec
import pytest
from click.testing import CliRunner

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, restore, verify
from natsobj.archive import index as layout
from natsobj.archive.targets import OFFLOAD_METADATA_KEY, TARGET_METADATA_KEY
from natsobj.archive.tiering import offload
from natsobj.cli.app import cli
from natsobj.cli.exits import ExitCode
from natsobj.errors import BucketNotFound, DigestMismatch, UntrustedArchiveLocation
from natsobj.names import meta_subject
from tests.archive.conftest import S3_ENV, subprocess_env


def run(coro):
    return asyncio.run(coro)


# -- 5: the record never chooses the S3 endpoint -------------------------------------------------


class Listener:
    """What the attacker's HTTP endpoint received: every request's line and headers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                listener.requests.append((self.requestline, dict(self.headers)))
                self.send_response(200)
                self.send_header("Content-Length", "5")
                self.end_headers()
                self.wfile.write(b"evil!")

            do_GET = do_HEAD = do_PUT = do_POST = _record

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def attacker() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.close()


def archive_and_offload(nats_url: str, bucket: str, target_url: str) -> None:
    async def body() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            store = await client.store(bucket)
            target = ArchiveTarget(target_url)
            await Archiver(store, target, small_object=64 * 1024).run(once=True)
            assert [i.name for i in (await offload(store, target)).offloaded] == ["victim.bin"]

    run(body())


def forge(raw, bucket: str, name: str, **offload: object) -> None:
    """Publish, as any writer of the bucket could, a copy of victim.bin's offloaded record
    under ``name`` with its offload location changed."""
    record = json.loads(raw.last_msg(meta_subject(bucket, "victim.bin"), bucket).data)
    record["name"] = name
    record["natsobj_tiering"]["offload"].update(offload)
    raw.publish(meta_subject(bucket, name), json.dumps(record).encode())


def cli_get(nats_url: str, bucket: str, name: str, dest: str) -> subprocess.CompletedProcess:
    """``natsobj get`` in a process of its own: it trusts nothing but its environment and
    the bucket's stream metadata."""
    return subprocess.run(
        [sys.executable, "-m", "natsobj.cli", "--url", nats_url, "get", bucket, name, dest],
        env=subprocess_env({}),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_record_naming_another_endpoint_sends_nothing_there(
    nats_url, store, raw, archive_url, attacker, tmp_path
):
    data = os.urandom(100_000)
    store.put("victim.bin", data)
    archive_and_offload(nats_url, store.bucket, archive_url)
    evil = f"http://127.0.0.1:{attacker.port}/"
    same_place = f"{archive_url}?endpoint={evil}"  # the genuine S3 bucket and prefix
    forge(raw, store.bucket, "same-place.bin", url=same_place)
    forge(raw, store.bucket, "elsewhere.bin", url=f"s3://loot/x?endpoint={evil}")
    forge(raw, store.bucket, "mirrored.bin", mirrors=[same_place])

    # a genuinely offloaded object still reads through, in this process and in another one
    assert store.get_bytes("victim.bin") == data
    fetched = cli_get(nats_url, store.bucket, "victim.bin", str(tmp_path / "victim.bin"))
    assert fetched.returncode == 0, fetched.stderr
    assert (tmp_path / "victim.bin").read_bytes() == data

    for name, location in [
        ("same-place.bin", same_place),
        ("elsewhere.bin", "s3://loot/x"),
        ("mirrored.bin", same_place),
    ]:
        with pytest.raises(UntrustedArchiveLocation) as raised:
            store.get_bytes(name)
        error = raised.value
        assert (error.bucket, error.name) == (store.bucket, name)
        assert location in str(error) and "not an archive target this reader trusts" in str(error)
        dest = tmp_path / name
        failed = cli_get(nats_url, store.bucket, name, str(dest))
        assert failed.returncode != 0 and not dest.exists()
        assert "not an archive target this reader trusts" in failed.stderr
        assert name in failed.stderr and store.bucket in failed.stderr
        assert S3_ENV["AWS_SECRET_ACCESS_KEY"] not in failed.stderr + str(error)

    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    with pytest.raises(UntrustedArchiveLocation):
        fs.cat(f"{store.bucket}/same-place.bin")

    assert attacker.requests == []  # no request, so no access key id or signature either
    assert store.get_bytes("victim.bin") == data


def test_offload_records_its_targets_in_the_stream_metadata(
    nats_url, sync_client, store, archive_url, tmp_path
):
    """An archiver of a second target re-records ``natsobj_archive``; readers elsewhere still
    trust the first target, which the offload noted for them."""
    from tests.archive.conftest import create_s3_bucket

    data = os.urandom(5000)
    store.put("victim.bin", data)
    archive_and_offload(nats_url, store.bucket, archive_url)
    second = f"s3://{create_s3_bucket(os.environ['AWS_ENDPOINT_URL'])}/second"

    async def second_archive() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            await Archiver(aio_store, ArchiveTarget(second)).run(once=True)

    run(second_archive())
    metadata = sync_client.store(store.bucket).status().metadata
    assert metadata[TARGET_METADATA_KEY] == second
    assert metadata[OFFLOAD_METADATA_KEY] == archive_url
    fetched = cli_get(nats_url, store.bucket, "victim.bin", str(tmp_path / "victim.bin"))
    assert fetched.returncode == 0, fetched.stderr
    assert (tmp_path / "victim.bin").read_bytes() == data


# -- 15: restore verifies as verify does ---------------------------------------------------------


def forge_index(target: ArchiveTarget, name: str, forged: bytes, digest: str | None) -> None:
    """Point ``name``'s index row at ``forged`` bytes (uploaded beside the real ones), with
    ``digest`` as its digest (None keeps the genuine one), as someone with write access to
    the S3 bucket could."""

    async def body() -> None:
        await target.put_bytes("versions/forged", forged)
        for key in await layout.segment_keys(target):
            records = layout.decode_segment(await target.get_bytes(key) or b"")
            for record in records:
                if record.name == name:
                    record.key, record.offset = "versions/forged", 0
                    record.size = record.length = len(forged)
                    record.digest = record.digest if digest is None else digest
            await target.put_bytes(key, layout.encode_segment(records))

    run(body())


@pytest.mark.parametrize(
    "digest",
    [
        pytest.param("", id="empty-digest"),
        pytest.param("SHA-256=not*base64", id="malformed-digest"),
        pytest.param(None, id="wrong-bytes"),
    ],
)
def test_restore_refuses_what_verify_refuses_and_writes_nothing(
    nats_url, sync_client, store, archive_url, digest
):
    store.put("a.txt", b"the genuine bytes")
    store.put("b.txt", b"another object")

    async def archive() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            await Archiver(await client.store(store.bucket), ArchiveTarget(archive_url)).run(
                once=True
            )

    run(archive())
    target = ArchiveTarget(archive_url)
    forge_index(target, "a.txt", b"FORGED bytes!", digest)
    report = run(verify(target))
    assert [record.name for record, _ in report.bad] == ["a.txt"]

    into_cli, into_api = f"{store.bucket}c", f"{store.bucket}a"
    try:
        result = CliRunner().invoke(
            cli, ["--url", nats_url, "archive", "restore", archive_url, "--to", into_cli]
        )
        assert result.exit_code == ExitCode.DIGEST_MISMATCH, result.output
        assert "a.txt" in result.output and "do not match the index" in result.output

        async def api() -> None:
            async with await natsobj.aio.connect(nats_url) as client:
                await restore(client, ArchiveTarget(archive_url), into_api)

        with pytest.raises(DigestMismatch) as raised:
            run(api())
        assert raised.value.name == "a.txt"

        for bucket in (into_cli, into_api):
            try:
                names = [info.name for info in sync_client.store(bucket).list()]
            except BucketNotFound:  # a malformed index digest stops it before the bucket
                assert digest is not None
                continue
            assert "a.txt" not in names
    finally:
        for bucket in (into_cli, into_api):
            with contextlib.suppress(natsobj.NatsObjError):
                sync_client.delete_store(bucket)


def test_restore_still_restores_a_sound_archive(nats_url, sync_client, store, archive_url):
    """The control: the same archive, unforged, restores every object."""
    store.put("a.txt", b"the genuine bytes")

    async def body(into: str) -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            await Archiver(await client.store(store.bucket), ArchiveTarget(archive_url)).run(
                once=True
            )
            await restore(client, ArchiveTarget(archive_url), into)

    into = f"t{uuid.uuid4().hex[:12]}"
    try:
        run(body(into))
        assert sync_client.store(into).get_bytes("a.txt") == b"the genuine bytes"
    finally:
        with contextlib.suppress(natsobj.NatsObjError):
            sync_client.delete_store(into)
