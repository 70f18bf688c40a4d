"""The CLI as an ``aws s3`` (and ``nats obj``) user types it, each friction of issue 30 run
through the installed console script against a real server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from natsobj.cli.exits import ExitCode

Run = Callable[..., subprocess.CompletedProcess[bytes]]
MiB = 1024 * 1024


def out(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def names(store) -> list[str]:
    return sorted(i.name for i in store.list())


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def other_bucket(sync_client, bucket_name: str) -> Iterator[str]:
    name = bucket_name + "o"
    sync_client.create_store(name)
    yield name
    sync_client.delete_store(name)


def test_every_command_takes_nats_urls(
    run_bin: Run, store, bucket_name: str, tmp_path: Path
) -> None:
    url = f"nats://{bucket_name}"
    source = tmp_path / "a.txt"
    source.write_bytes(b"hello")
    out(run_bin("put", f"{url}/up/a.txt", str(source)))
    out(run_bin("put", f"{url}/up/", str(source)))  # a prefix: the file's name is added
    assert names(store) == ["up/a.txt"]
    assert "up/" in out(run_bin("ls", f"{url}/"))
    assert "a.txt" in out(run_bin("ls", f"{url}/up/"))
    assert run_bin("cat", f"{url}/up/a.txt").stdout == b"hello"
    assert json.loads(out(run_bin("info", f"{url}/up/a.txt", "--json")))["size"] == 5
    out(run_bin("get", f"{url}/up/a.txt", str(tmp_path / "back.txt")))
    assert (tmp_path / "back.txt").read_bytes() == b"hello"
    out(run_bin("meta", "set", f"{url}/up/a.txt", "-d", "greeting"))
    out(run_bin("mv", f"{url}/up/a.txt", f"{url}/up/b.txt"))
    out(run_bin("link", f"{url}/ln", f"{url}/up/b.txt"))
    assert store.get_info("ln").link.name == "up/b.txt"
    watched = out(run_bin("watch", f"{url}/up/", "--history", "--count", "1", "--json"))
    assert json.loads(watched)["name"].startswith("up/")
    assert json.loads(out(run_bin("store", "status", url, "--json")))["bucket"] == bucket_name
    store.put("up/c.txt", b"c")
    out(run_bin("rm", f"{url}/up/b.txt", f"{url}/up/c.txt"))
    assert names(store) == ["ln"]
    assert "Missing argument 'NAME'" in run_bin("cat", bucket_name).stderr.decode()


def test_cp_copies_local_to_nats_nats_to_local_and_nats_to_nats(
    run_bin: Run, store, sync_client, bucket_name: str, other_bucket: str, tmp_path: Path
) -> None:
    url, other = f"nats://{bucket_name}", f"nats://{other_bucket}"
    source = tmp_path / "f.txt"
    source.write_bytes(b"data")
    out(run_bin("cp", str(source), f"{url}/f.txt"))
    out(run_bin("cp", str(source), f"{url}/in/"))
    out(run_bin("cp", "-", f"{url}/piped.txt", stdin=b"from stdin"))
    assert names(store) == ["f.txt", "in/f.txt", "piped.txt"]

    out(run_bin("cp", f"{url}/in/f.txt", str(tmp_path / "got.txt")))
    assert (tmp_path / "got.txt").read_bytes() == b"data"
    assert run_bin("cp", f"{url}/piped.txt", "-").stdout == b"from stdin"

    out(run_bin("cp", f"{url}/in/f.txt", f"{other}/copied.txt"))
    out(run_bin("cp", f"{url}/in/f.txt", f"{other}/dir/"))
    assert names(sync_client.store(other_bucket)) == ["copied.txt", "dir/f.txt"]

    tree = tmp_path / "tree"
    for relative in ("a.csv", "sub/b.csv"):
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_bytes(relative.encode())
    out(run_bin("cp", "-r", str(tree), f"{url}/t/"))
    assert store.get_bytes("t/sub/b.csv") == b"sub/b.csv"
    out(run_bin("cp", "-r", f"{url}/t/", str(tmp_path / "down")))
    assert _tree(tmp_path / "down") == {"a.csv": b"a.csv", "sub/b.csv": b"sub/b.csv"}
    out(run_bin("cp", "-r", f"{url}/t/", f"{other}/t2/"))
    assert sync_client.store(other_bucket).get_bytes("t2/sub/b.csv") == b"sub/b.csv"
    out(run_bin("cp", bucket_name, "f.txt", other_bucket, "old-form.txt"))  # still works
    assert sync_client.store(other_bucket).get_bytes("old-form.txt") == b"data"

    both_local = run_bin("cp", str(source), str(tmp_path / "x"))
    assert both_local.returncode == ExitCode.USAGE
    ignored = run_bin("cp", f"{url}/f.txt", f"{other}/g.txt", "--content-type", "text/plain")
    assert ignored.returncode == ExitCode.USAGE  # refused, never silently ignored
    assert "--content-type describe an upload" in ignored.stderr.decode()


def _tree_of(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return root


def test_exclude_include_follow_aws_on_every_recursive_command(
    run_bin: Run, store, sync_client, bucket_name: str, other_bucket: str, tmp_path: Path
) -> None:
    """In order, the last matching filter decides, '*' crosses '/', patterns are relative
    to the source directory or prefix."""
    local = _tree_of(
        tmp_path / "src", {"a.csv": b"1", "deep/b.csv": b"2", "c.json": b"3", "x.tmp": b"4"}
    )
    url = f"nats://{bucket_name}"
    out(run_bin("put", "-r", bucket_name, "p", str(local), "--exclude", "*.tmp"))
    assert names(store) == ["p/a.csv", "p/c.json", "p/deep/b.csv"]
    # the later filter wins: every csv, at any depth, and nothing else
    out(
        run_bin(
            "get", "-r", f"{url}/p", str(tmp_path / "g"), "--exclude", "*", "--include", "*.csv"
        )
    )
    assert sorted(_tree(tmp_path / "g")) == ["a.csv", "deep/b.csv"]
    out(
        run_bin(
            "get", "-r", f"{url}/p", str(tmp_path / "h"), "--include", "*.csv", "--exclude", "*"
        )
    )
    assert not (tmp_path / "h").exists() or _tree(tmp_path / "h") == {}
    out(run_bin("cp", "-r", f"{url}/p/", f"nats://{other_bucket}/q/", "--exclude", "deep/*"))
    assert names(sync_client.store(other_bucket)) == ["q/a.csv", "q/c.json"]
    out(run_bin("cp", "-r", str(local), f"{url}/r/", "--exclude", "*", "--include", "c.*"))
    assert [n for n in names(store) if n.startswith("r/")] == ["r/c.json"]
    out(run_bin("rm", "-r", f"{url}/p", "--exclude", "*", "--include", "*.json"))
    assert [n for n in names(store) if n.startswith("p/")] == ["p/a.csv", "p/deep/b.csv"]


def test_dryrun_is_an_alias_and_rm_has_one(
    run_bin: Run, store, bucket_name: str, tmp_path: Path
) -> None:
    local = _tree_of(tmp_path / "src", {"a.csv": b"1"})
    url = f"nats://{bucket_name}"
    for args in (
        ("sync", str(local), f"{url}/s", "--dryrun"),
        ("put", "-r", f"{url}/s", str(local), "--dryrun"),
        ("cp", "-r", str(local), f"{url}/s/", "--dryrun"),
    ):
        assert "(dryrun) upload:" in out(run_bin(*args))
    assert names(store) == []
    store.put("up/a.csv", b"a")
    for flag in ("--dry-run", "--dryrun"):
        said = out(run_bin("rm", bucket_name, "up/a.csv", flag))
        assert said == f"(dryrun) delete: {url}/up/a.csv\n"
    assert names(store) == ["up/a.csv"]
    assert "(dryrun) download:" in out(run_bin("get", f"{url}/up/a.csv", "-", "--dryrun"))


def test_quiet_prints_no_operations(run_bin: Run, store, bucket_name: str, tmp_path: Path) -> None:
    local = _tree_of(tmp_path / "src", {"a.csv": b"1", "b.csv": b"2"})
    url = f"nats://{bucket_name}"
    assert out(run_bin("put", "-r", f"{url}/q", str(local), "--quiet")) == ""
    assert out(run_bin("cp", "-r", f"{url}/q", str(tmp_path / "d"), "--quiet")) == ""
    assert out(run_bin("sync", str(local), f"{url}/s", "--quiet")) == ""
    assert out(run_bin("rm", "-r", f"{url}/q", "--quiet")) == ""
    assert names(store) == ["s/a.csv", "s/b.csv"]


def test_content_type_is_stored_as_the_content_type_header(
    run_bin: Run, store, bucket_name: str, tmp_path: Path
) -> None:
    source = tmp_path / "page.html"
    source.write_bytes(b"<p>")
    url = f"nats://{bucket_name}"
    out(run_bin("put", f"{url}/page.html", str(source), "--content-type", "text/html"))
    out(run_bin("cp", str(source), f"{url}/copy.html", "--content-type", "text/plain"))
    assert store.get_info("page.html").headers == {"Content-Type": ["text/html"]}
    assert store.get_info("copy.html").headers == {"Content-Type": ["text/plain"]}


def test_ls_human_readable_and_summarize(run_bin: Run, store, bucket_name: str) -> None:
    store.put("a.bin", b"a" * 1024)
    store.put("dir/b.bin", b"b" * 2048)
    listing = out(run_bin("ls", f"nats://{bucket_name}/", "--human-readable", "--summarize"))
    assert "1.0 KiB" in listing and "2.0 KiB" in listing  # binary units
    assert listing.endswith("\nTotal Objects: 2\n   Total Size: 3.0 KiB\n")  # aws's shape
    in_bytes = out(run_bin("ls", f"nats://{bucket_name}/", "--summarize"))
    assert in_bytes.endswith("\nTotal Objects: 2\n   Total Size: 3072\n")  # as aws, bytes
    summary = json.loads(out(run_bin("ls", bucket_name, "--summarize", "--json")))
    assert (summary["total_objects"], summary["total_size"]) == (2, 3072)


def test_rm_takes_globs(run_bin: Run, store, bucket_name: str) -> None:
    for name in ("up/a.csv", "up/b.csv", "up/deep/c.csv", "up/x.txt", "up/lit*.csv"):
        store.put(name, b"x")
    said = out(run_bin("rm", bucket_name, "up/*.csv"))
    assert said.count("deleted") == 3  # '*' within a segment: up/deep/c.csv stays
    assert names(store) == ["up/deep/c.csv", "up/x.txt"]
    store.put("up/lit*.csv", b"x")
    store.put("up/literal.csv", b"x")
    out(run_bin("rm", bucket_name, "up/lit[*].csv"))  # a class for a literal '*'
    assert "up/literal.csv" in names(store) and "up/lit*.csv" not in names(store)
    none = run_bin("rm", bucket_name, "nothing/*.csv")
    assert none.returncode == ExitCode.NOT_FOUND
    assert "no object matches the glob 'nothing/*.csv'" in none.stderr.decode()


def test_nats_obj_words_for_stores(run_bin: Run, sync_client, bucket_name: str) -> None:
    out(run_bin("store", "add", bucket_name, "--ttl", "7d"))
    try:
        assert bucket_name in out(run_bin("store", "ls"))
        assert out(run_bin("store", "ls", "--json")) == out(run_bin("stores", "--json"))
        status = json.loads(out(run_bin("store", "info", bucket_name, "--json")))
        assert status["ttl_seconds"] == 7 * 86400
        sync_client.store(bucket_name).put("image.jpg", b"x")
        out(run_bin("del", bucket_name, "image.jpg"))
        assert sync_client.store(bucket_name).list() == []
    finally:
        sync_client.delete_store(bucket_name)


def test_ages_take_durations(run_bin: Run, store, bucket_name: str) -> None:
    compacted = out(run_bin("store", "compact", bucket_name, "--min-age", "1h", "--json"))
    assert json.loads(compacted)["bucket"] == bucket_name
    bad = run_bin("store", "compact", bucket_name, "--min-age", "soon")
    assert bad.returncode == ExitCode.USAGE and "duration" in bad.stderr.decode()


def test_get_of_a_prefix_says_use_r(run_bin: Run, store, bucket_name: str, tmp_path: Path) -> None:
    store.put("sync/a", b"a")
    store.put("sync/b", b"b")
    got = run_bin("get", bucket_name, "sync", str(tmp_path / "out2"))
    assert got.returncode == ExitCode.NOT_FOUND
    said = got.stderr.decode()
    assert "prefix of 2 objects" in said and "-r" in said, said
    assert not (tmp_path / "out2").exists()
    missing = run_bin("get", bucket_name, "nothing", str(tmp_path / "out3"))
    assert missing.returncode == ExitCode.NOT_FOUND and "prefix" not in missing.stderr.decode()


def test_a_put_that_cannot_fit_max_bytes_fails_before_sending(
    run_bin: Run, sync_client, bucket_name: str, tmp_path: Path
) -> None:
    store = sync_client.create_store(bucket_name, max_bytes=MiB)
    try:
        before = store.status().last_sequence
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(2 * MiB))
        refused = run_bin("put", bucket_name, "big.bin", str(big))
        assert refused.returncode == ExitCode.FAILED
        said = refused.stderr.decode()
        assert "does not fit" in said and bucket_name in said and str(2 * MiB) in said, said
        assert store.status().last_sequence == before  # not a byte sent
        assert store.list() == []
    finally:
        sync_client.delete_store(bucket_name)


def test_sizes_are_binary(run_bin: Run, store, bucket_name: str, tmp_path: Path) -> None:
    source = tmp_path / "chunked"
    source.write_bytes(b"c" * (300 * 1024))
    put = out(run_bin("put", bucket_name, "chunked", str(source), "--chunk-size", "128KiB"))
    assert "300.0 KiB" in put and "3 chunks" in put, put
    shown = out(run_bin("info", bucket_name, "chunked"))
    assert "chunk size  128.0 KiB" in shown and "300.0 KiB" in shown, shown
    assert store.get_info("chunked").chunk_size == 128 * 1024
