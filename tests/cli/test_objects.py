"""``ls``, ``info``, ``rm``, ``mv``, ``link`` and ``meta set`` against a real server."""

from __future__ import annotations

import json

from cli_support import Invoke

from natsobj.cli.exits import ExitCode


def _seed(store) -> None:
    store.put("readme.txt", b"hello")
    store.put("reports/2026/jan.csv", b"a" * 2000)
    store.put("reports/2026/feb.csv", b"b" * 3000)
    store.put("reports/summary.json", b"{}")


def test_ls_folds_prefixes_into_directories(invoke: Invoke, bucket_name: str, store) -> None:
    _seed(store)
    top = invoke("ls", bucket_name)
    assert top.exit_code == 0, top.stderr
    names = [line.split()[0] for line in top.stdout.splitlines()[2:] if line.strip()]
    assert names == ["reports/", "readme.txt"]
    reports_row = next(line for line in top.stdout.splitlines() if line.startswith("reports/"))
    assert "4.9 KiB" in reports_row  # 2000 + 3000 + 2 bytes, summed

    for prefix in ("reports", "reports/"):
        doc = json.loads(invoke("ls", bucket_name, prefix, "--json").stdout)
        assert doc["prefix"] == "reports/"
        assert [d["name"] for d in doc["directories"]] == ["reports/2026/"]
        assert doc["directories"][0]["objects"] == 2
        assert doc["directories"][0]["size"] == 5000
        assert [o["name"] for o in doc["objects"]] == ["reports/summary.json"]

    flat = json.loads(invoke("ls", bucket_name, "-r", "--json").stdout)
    assert flat["directories"] == []
    assert [o["name"] for o in flat["objects"]] == [
        "readme.txt", "reports/2026/feb.csv", "reports/2026/jan.csv", "reports/summary.json",
    ]  # fmt: skip
    jan = next(o for o in flat["objects"] if o["name"] == "reports/2026/jan.csv")
    assert jan["size"] == 2000 and jan["digest"].startswith("SHA-256=") and jan["mtime"]

    exact = json.loads(invoke("ls", bucket_name, "readme.txt", "--json").stdout)
    assert [o["name"] for o in exact["objects"]] == ["readme.txt"]

    missing = invoke("ls", bucket_name, "nope/")
    assert missing.exit_code == ExitCode.NOT_FOUND
    assert "nope/" in missing.stderr


def test_ls_human_columns_and_deleted(invoke: Invoke, bucket_name: str, store) -> None:
    info = store.put("model.bin", b"m" * 1_500_000, chunk_size=500_000)
    store.put("gone.txt", b"bye")
    store.delete("gone.txt")

    listing = invoke("ls", bucket_name)
    assert listing.stdout.splitlines()[0].split() == [
        "NAME",
        "SIZE",
        "CHUNKS",
        "MODIFIED",
        "DIGEST",
    ]
    row = next(line for line in listing.stdout.splitlines() if line.startswith("model.bin"))
    assert "1.4 MiB" in row and " 3 " in row
    assert info.digest.removeprefix("SHA-256=")[:12] in row
    assert "gone.txt" not in listing.stdout
    assert all(line == line.rstrip() for line in listing.stdout.splitlines())  # no padding

    with_deleted = invoke("ls", bucket_name, "--deleted")
    assert "gone.txt (deleted)" in with_deleted.stdout
    doc = json.loads(invoke("ls", bucket_name, "--deleted", "--json").stdout)
    assert {o["name"]: o["deleted"] for o in doc["objects"]} == {
        "gone.txt": True,
        "model.bin": False,
    }


def test_empty_bucket_lists_nothing(invoke: Invoke, bucket_name: str, store) -> None:
    doc = json.loads(invoke("ls", bucket_name, "--json").stdout)
    assert doc == {"bucket": bucket_name, "prefix": "", "directories": [], "objects": []}


def test_info_rm_and_mv(invoke: Invoke, bucket_name: str, store) -> None:
    store.put("a/one.txt", b"1", description="first", metadata={"stage": "raw"})
    store.put("a/two.txt", b"22")
    store.put("b.txt", b"333")

    shown = json.loads(invoke("info", bucket_name, "a/one.txt", "--json").stdout)
    assert shown["name"] == "a/one.txt" and shown["size"] == 1
    assert shown["description"] == "first" and shown["metadata"] == {"stage": "raw"}
    human = invoke("info", bucket_name, "a/one.txt")
    assert "metadata stage" in human.stdout and "raw" in human.stdout

    moved = invoke("mv", bucket_name, "b.txt", "c/b.txt")
    assert moved.exit_code == 0, moved.stderr
    assert store.get_bytes("c/b.txt") == b"333"
    assert invoke("info", bucket_name, "b.txt").exit_code == ExitCode.NOT_FOUND

    removed = invoke("rm", bucket_name, "-r", "a")
    assert removed.exit_code == 0
    assert removed.stdout.count("deleted") == 2
    assert [i.name for i in store.list()] == ["c/b.txt"]
    tombstone = json.loads(invoke("info", bucket_name, "a/one.txt", "--deleted", "--json").stdout)
    assert tombstone["deleted"] is True

    assert invoke("rm", bucket_name, "never-existed").exit_code == ExitCode.NOT_FOUND


def test_links_to_objects_and_buckets(invoke: Invoke, bucket_name: str, store, sync_client) -> None:
    store.put("data.csv", b"x,y\n1,2\n")
    other = f"{bucket_name}o"
    sync_client.create_store(other)
    try:
        made = invoke("link", other, "latest.csv", bucket_name, "data.csv")
        assert made.exit_code == 0, made.stderr
        assert f"-> {bucket_name}/data.csv" in made.stdout
        refused = invoke("get", other, "latest.csv", "-")  # into another bucket: asked for
        assert refused.exit_code != 0 and f"{bucket_name}/data.csv" in refused.stderr
        got = invoke("get", "--follow-links", other, "latest.csv", "-")
        assert got.stdout_bytes == b"x,y\n1,2\n"

        assert invoke("link", other, "all", bucket_name).exit_code == 0
        doc = json.loads(invoke("info", other, "all", "--json").stdout)
        assert doc["options"]["link"] == {"bucket": bucket_name}
        listing = invoke("ls", other).stdout
        assert f"latest.csv -> {bucket_name}/data.csv" in listing
        assert f"all -> {bucket_name}/" in listing

        dangling = invoke("link", other, "x", bucket_name, "missing.csv")
        assert dangling.exit_code == ExitCode.NOT_FOUND
    finally:
        sync_client.delete_store(other)


def test_meta_set_merges_unsets_and_replaces(invoke: Invoke, bucket_name: str, store) -> None:
    store.put("m.txt", b"payload", metadata={"a": "1", "b": "2"}, headers={"X-Run": ["7"]})

    merged = invoke(
        "meta", "set", bucket_name, "m.txt", "-d", "checked", "-m", "c=3", "--unset", "a",
        "-H", "X-Owner:ana", "--json",
    )  # fmt: skip
    assert merged.exit_code == 0, merged.stderr
    doc = json.loads(merged.stdout)
    assert doc["description"] == "checked"
    assert doc["metadata"] == {"b": "2", "c": "3"}
    assert doc["headers"] == {"X-Run": ["7"], "X-Owner": ["ana"]}

    replaced = invoke("meta", "set", bucket_name, "m.txt", "--replace", "-m", "only=this", "--json")
    assert json.loads(replaced.stdout)["metadata"] == {"only": "this"}
    assert store.get_info("m.txt").description == "checked"  # not given, so kept
    assert store.get_bytes("m.txt") == b"payload"  # the data is never touched


def test_header_k_equals_v_is_deprecated_but_still_works(
    invoke: Invoke, bucket_name: str, store
) -> None:
    store.put("h.txt", b"payload")
    old = invoke(
        "meta", "set", bucket_name, "h.txt", "-H", "X-Url=http://a/b", "-H", "X-Kind: csv=yes",
        "--json",
    )  # fmt: skip
    assert old.exit_code == 0, old.stderr
    assert "K=V is deprecated" in old.stderr and "X-Url=http://a/b" in old.stderr
    assert json.loads(old.stdout)["headers"] == {"X-Url": ["http://a/b"], "X-Kind": ["csv=yes"]}
    bad = invoke("meta", "set", bucket_name, "h.txt", "-H", "no-separator")
    assert bad.exit_code == ExitCode.USAGE and "KEY:VALUE" in bad.stderr
