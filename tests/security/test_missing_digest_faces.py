"""A record without a digest is refused by every face that reads objects, and read only where
the user opted out with ``allow_missing_digest`` (``--allow-missing-digest`` on the command
line): issue 21, point 9, beyond the core ``get``/``get_bytes``/``get_file``.

The record is republished without its digest through nats-py (tests/raw.py), as a client that
writes none would leave it. The Airflow, Dagster, Spark and archive faces have their tests
beside their own fixtures (tests/<face>/test_missing_digest.py) and use ``strip_digest``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from natsobj.cli import cli
from natsobj.cli.exits import ExitCode
from natsobj.errors import MissingDigest
from natsobj.fs import NatsObjectFileSystem
from tests.security.test_records import meta_subject, publish_record

CONTENT = os.urandom(300_000)  # three chunks


def strip_digest(raw, bucket: str, name: str) -> None:
    """Republish ``name``'s meta record as it stands, minus its digest."""
    record = json.loads(raw.last_msg(meta_subject(bucket, name), bucket).data)
    del record["digest"]
    publish_record(raw, bucket, name, record)


def refusal(bucket: str, name: str) -> str:
    """What MissingDigest says, naming the bucket and the object."""
    return f"bucket {bucket!r}, object {name!r}: the meta record has no digest"


def test_cli_get_and_sync_refuse_a_record_without_digest_unless_allowed(
    store, raw, nats_url, tmp_path: Path
):
    store.put("d/plain", CONTENT)
    strip_digest(raw, store.bucket, "d/plain")
    runner = CliRunner()
    bucket = store.bucket
    commands = {
        "get": ["get", bucket, "d/plain", str(tmp_path / "one")],
        "get -": ["get", bucket, "d/plain", "-"],
        "get -r": ["get", "-r", bucket, "d", str(tmp_path / "tree")],
        "sync": ["sync", f"nats://{bucket}/d", str(tmp_path / "synced")],
        "cp": ["cp", bucket, "d/plain", bucket, "copy/plain"],
        "cp -r": ["cp", "-r", bucket, "d", bucket, "copies"],
        "get --range": ["get", bucket, "d/plain", "-", "--range", "0-9"],
        "cat --range": ["cat", bucket, "d/plain", "--range", "-5"],
    }
    for what, args in commands.items():
        refused = runner.invoke(cli, ["--url", nats_url, *args])
        assert refused.exit_code == ExitCode.DIGEST_MISMATCH, (what, refused.output)
        assert refusal(bucket, "d/plain") in refused.output, (what, refused.output)
        assert "--allow-missing-digest" in refused.output, (what, refused.output)
    assert not (tmp_path / "one").exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert [i.name for i in store.list()] == ["d/plain"]  # nothing copied

    for what, args in commands.items():
        read = runner.invoke(
            cli, ["--url", nats_url, *args[:1], "--allow-missing-digest", *args[1:]]
        )
        assert read.exit_code == 0, (what, read.output)
    assert read.stdout_bytes is not None
    assert (tmp_path / "one").read_bytes() == CONTENT
    assert (tmp_path / "tree" / "plain").read_bytes() == CONTENT
    assert (tmp_path / "synced" / "plain").read_bytes() == CONTENT
    # A copy records the digest of the bytes read: strict reads accept it.
    assert store.get_bytes("copy/plain") == store.get_bytes("copies/plain") == CONTENT
    got = runner.invoke(
        cli, ["--url", nats_url, "get", "--allow-missing-digest", bucket, "d/plain", "-"]
    )
    assert got.stdout_bytes == CONTENT


def test_fsspec_refuses_a_record_without_digest_unless_the_storage_option_allows(
    store, raw, nats_url, tmp_path: Path
):
    store.put("plain", CONTENT)
    strip_digest(raw, store.bucket, "plain")
    path = f"nats://{store.bucket}/plain"
    copy = f"nats://{store.bucket}/copy"

    strict = NatsObjectFileSystem(nats_url, skip_instance_cache=True)
    reads = {
        "cat": lambda fs: fs.cat_file(path),
        "cat range": lambda fs: fs.cat_file(path, start=10, end=20),
        "open": lambda fs: fs.open(path, "rb").read(),
        "get": lambda fs: (
            fs.get_file(path, str(tmp_path / "out")) or (tmp_path / "out").read_bytes()
        ),
        "cp": lambda fs: fs.cp_file(path, copy) and strict.cat_file(copy),
    }
    for read in reads.values():
        with pytest.raises(MissingDigest, match=refusal(store.bucket, "plain")):
            read(strict)
    assert not (tmp_path / "out").exists()
    assert not strict.exists(copy)

    lenient = NatsObjectFileSystem(nats_url, allow_missing_digest=True, skip_instance_cache=True)
    expected = {"cat range": CONTENT[10:20]}
    for what, read in reads.items():
        assert read(lenient) == expected.get(what, CONTENT), what


def test_ranged_reads_refuse_a_record_without_digest_unless_allowed(store, raw):
    """The core's ranged reads take the same rule as ``get``, so every face built on them
    (fsspec, Spark's row groups, Dagster's column subsets, the CLI's --range) does too."""
    store.put("plain", CONTENT)
    strip_digest(raw, store.bucket, "plain")
    with pytest.raises(MissingDigest):
        store.get_range("plain", 0, 10)
    with pytest.raises(MissingDigest):
        store.open_range("plain")
    assert store.get_range("plain", 0, 10, allow_missing_digest=True) == CONTENT[:10]
    with store.open_range("plain", allow_missing_digest=True) as reader:
        assert reader.read() == CONTENT


def test_the_python_face_takes_a_bool_never_words(store, raw) -> None:
    """Words are a face's to parse (the CLI's flag, the operators' templated fields): handed
    to the Python face or the Airflow hook unparsed, ``"no"`` is truthy and would read as
    consent. It is refused before anything is read."""
    store.put("d/plain", CONTENT)
    strip_digest(raw, store.bucket, "d/plain")
    for words in ("no", "false", 0):
        with pytest.raises(TypeError, match="allow_missing_digest must be a bool"):
            store.get_bytes("d/plain", allow_missing_digest=words)
    with pytest.raises(MissingDigest):
        store.get_bytes("d/plain", allow_missing_digest=False)
    assert store.get_bytes("d/plain", allow_missing_digest=True) == CONTENT
