"""``natsobj ls`` without a bucket, ``cp`` across buckets, and ``sync`` both ways with
``--delete``, ``--dry-run`` and ``--include``/``--exclude``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Invoke

from natsobj.cli.exits import ExitCode


@pytest.fixture
def other_bucket(sync_client, bucket_name: str) -> Iterator[str]:
    name = bucket_name + "cp"
    sync_client.create_store(name)
    yield name
    sync_client.delete_store(name)


def test_ls_without_a_bucket_lists_the_stores(invoke: Invoke, bucket_name: str, store) -> None:
    text = invoke("ls")
    assert text.exit_code == 0, text.stderr
    assert bucket_name in text.stdout and "BUCKET" in text.stdout
    as_json = invoke("ls", "--json")
    assert bucket_name in [s["bucket"] for s in json.loads(as_json.stdout)]
    assert json.loads(as_json.stdout) == json.loads(invoke("stores", "--json").stdout)


def test_cp_across_buckets_keeps_headers_and_metadata(
    invoke: Invoke, store, bucket_name: str, other_bucket: str, sync_client
) -> None:
    data = bytes(range(256)) * 2000
    original = store.put(
        "models/m.bin", data, description="weights", headers={"Content-Type": "x/y"},
        metadata={"run": "7"}, chunk_size=4096,
    )  # fmt: skip
    copied = invoke("cp", bucket_name, "models/m.bin", other_bucket, "final/m.bin")
    assert copied.exit_code == 0, copied.stderr
    target = sync_client.store(other_bucket)
    info = target.get_info("final/m.bin")
    assert (info.digest, info.size, info.description) == (original.digest, len(data), "weights")
    assert info.headers == {"Content-Type": ["x/y"]} and info.metadata == {"run": "7"}
    assert info.chunk_size == 4096 and info.nuid != original.nuid
    assert target.get_bytes("final/m.bin") == data
    assert store.get_bytes("models/m.bin") == data  # the source is untouched

    same_name = invoke("cp", bucket_name, "models/m.bin", other_bucket)
    assert same_name.exit_code == 0 and target.get_info("models/m.bin").digest == info.digest
    missing = invoke("cp", bucket_name, "nope", other_bucket)
    assert missing.exit_code == ExitCode.NOT_FOUND and "nope" in missing.stderr


def test_cp_recursive_copies_a_prefix(
    invoke: Invoke, store, bucket_name: str, other_bucket: str, sync_client
) -> None:
    for name in ("in/a", "in/sub/b", "other/c"):
        store.put(name, name.encode())
    result = invoke("cp", "-r", bucket_name, "in", other_bucket, "copy")
    assert result.exit_code == 0, result.stderr
    target = sync_client.store(other_bucket)
    assert sorted(i.name for i in target.list()) == ["copy/a", "copy/sub/b"]
    assert target.get_bytes("copy/sub/b") == b"in/sub/b"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_sync_up_transfers_only_changes_and_deletes_with_dry_run_first(
    invoke: Invoke, store, bucket_name: str, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.csv").write_bytes(b"1,2")
    (src / "sub" / "b.csv").write_bytes(b"3,4")
    (src / "notes.txt").write_bytes(b"skip me")
    uri = f"nats://{bucket_name}/data"

    first = invoke("sync", str(src), uri, "--exclude", "*.txt")
    assert first.exit_code == 0, first.stderr
    assert sorted(i.name for i in store.list()) == ["data/a.csv", "data/sub/b.csv"]
    untouched = store.get_info("data/a.csv").sequence

    again = invoke("sync", str(src), uri, "--exclude", "*.txt")
    assert again.stdout == ""  # same size and digest: nothing to send

    (src / "a.csv").write_bytes(b"9,9")  # same size, new content: sent by digest
    (src / "sub" / "b.csv").unlink()
    store.put("data/stray.bin", b"only remote")
    dry = invoke("sync", str(src), uri, "--exclude", "*.txt", "--delete", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert sorted(dry.stdout.splitlines()) == [
        f"(dryrun) delete: {uri}/stray.bin",
        f"(dryrun) delete: {uri}/sub/b.csv",
        f"(dryrun) upload: {src / 'a.csv'} to {uri}/a.csv",
    ]
    assert store.get_info("data/a.csv").sequence == untouched  # a dry run changes nothing
    assert "data/stray.bin" in [i.name for i in store.list()]

    real = invoke("sync", str(src), uri, "--exclude", "*.txt", "--delete")
    assert real.exit_code == 0, real.stderr
    assert sorted(i.name for i in store.list()) == ["data/a.csv"]
    assert store.get_bytes("data/a.csv") == b"9,9"


def test_sync_down_with_include_exclude_and_delete(
    invoke: Invoke, store, bucket_name: str, tmp_path: Path
) -> None:
    for name, data in {"p/a.csv": b"a", "p/deep/b.csv": b"b", "p/c.json": b"c"}.items():
        store.put(name, data)
    dest = tmp_path / "dest"
    uri = f"nats://{bucket_name}/p"
    # aws s3's filters: in order, the last match decides; the later exclude wins here
    nothing = invoke("sync", uri, str(dest), "--include", "*.csv", "--exclude", "*")
    assert nothing.exit_code == 0, nothing.stderr
    assert not dest.exists() or _tree(dest) == {}
    # and '*' crosses '/', so 'a.csv' is not alone: '?' stays within a segment
    only_top_csv = invoke("sync", uri, str(dest), "--exclude", "*", "--include", "?.csv")
    assert only_top_csv.exit_code == 0, only_top_csv.stderr
    assert _tree(dest) == {"a.csv": b"a"}
    every_csv = invoke("sync", uri, str(dest), "--exclude", "*", "--include", "*.csv")
    assert _tree(dest) == {"a.csv": b"a", "deep/b.csv": b"b"}
    assert every_csv.stdout.count("download:") == 1

    everything = invoke("sync", uri, str(dest))
    assert _tree(dest) == {"a.csv": b"a", "deep/b.csv": b"b", "c.json": b"c"}
    assert "a.csv" not in everything.stdout  # already there with the same digest

    (dest / "local-only.txt").write_bytes(b"x")
    (dest / "c.json").write_bytes(b"changed")
    dry = invoke("sync", uri, str(dest), "--delete", "--dry-run")
    assert sorted(dry.stdout.splitlines()) == [
        f"(dryrun) delete: {dest / 'local-only.txt'}",
        f"(dryrun) download: {uri}/c.json to {dest / 'c.json'}",
    ]
    assert (dest / "local-only.txt").exists() and (dest / "c.json").read_bytes() == b"changed"
    invoke("sync", uri, str(dest), "--delete")
    assert _tree(dest) == {"a.csv": b"a", "deep/b.csv": b"b", "c.json": b"c"}


def test_sync_needs_one_local_and_one_remote_side(invoke: Invoke, tmp_path: Path) -> None:
    both_local = invoke("sync", str(tmp_path), str(tmp_path))
    assert both_local.exit_code == ExitCode.USAGE
    assert "one local directory and one nats://" in both_local.stderr
