"""``natsobj watch``: history replay in-process, live changes from the real executable."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_support import Invoke, cli_env


def test_history_with_glob_as_text_and_json(invoke: Invoke, bucket_name: str, store) -> None:
    store.put("logs/a.log", b"a")
    store.put("data/b.csv", b"bb")
    store.put("data/c.csv", b"ccc")
    store.delete("data/b.csv")

    # each meta record rolls up the one before it, so the history holds the latest per name
    text = invoke("watch", bucket_name, "--history", "--glob", "data/*", "--count", "2")
    assert text.exit_code == 0, text.stderr
    events = [line.split()[2:4] for line in text.stdout.splitlines()]
    assert events == [["PUT", "data/c.csv"], ["DEL", "data/b.csv"]]
    assert "watching" in text.stderr

    as_json = invoke(
        "watch", bucket_name, "--history", "--no-include-deletes", "--json", "--count", "2"
    )
    docs = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [d["name"] for d in docs] == ["logs/a.log", "data/c.csv"]
    assert all(d["deleted"] is False and d["digest"].startswith("SHA-256=") for d in docs)


def test_version_events_are_shown_only_when_asked(invoke: Invoke, bucket_name: str, store) -> None:
    store.set_versioning("Enabled")
    first = store.put("a", b"1")
    second = store.put("a", b"22")
    store.delete("a", version=first.nuid)
    store.lock("a", legal_hold=True)
    store.put("b", b"333")
    asked = invoke("watch", bucket_name, "--history", "--include-version-events", "--count", "4")
    assert asked.exit_code == 0, asked.stderr
    lines = asked.stdout.splitlines()
    assert [line.split()[2:4] for line in lines] == [
        ["PUT", "a"],
        ["RMV", "a"],
        ["LOCK", "a"],
        ["PUT", "b"],
    ]
    assert f"version {first.nuid}" in lines[1] and lines[2].endswith("legal hold")
    as_json = invoke(
        "watch", bucket_name, "--history", "--include-version-events", "--json", "--count", "3"
    )
    docs = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [d.get("event") for d in docs] == [None, "version_removed", "lock"]
    assert docs[2]["version_id"] == second.nuid and docs[2]["lock"]["legal_hold"] is True
    # not asked: the lock and the removal are no changes of an object
    plain = invoke("watch", bucket_name, "--history", "--json", "--count", "2")
    assert [json.loads(line)["name"] for line in plain.stdout.splitlines()] == ["a", "b"]


def test_glob_is_path_aware_and_regex_filters(invoke: Invoke, bucket_name: str, store) -> None:
    for name in ("data/a.csv", "data/old/b.csv", "data/c.json"):
        store.put(name, b"x")
    shallow = invoke("watch", bucket_name, "--history", "--glob", "data/*.csv", "--count", "1")
    deep = invoke("watch", bucket_name, "--history", "--glob", "data/**.csv", "--count", "2")
    regex = invoke("watch", bucket_name, "--history", "--regex", r".*\.json", "--count", "1")
    assert [line.split()[3] for line in shallow.stdout.splitlines()] == ["data/a.csv"]
    assert [line.split()[3] for line in deep.stdout.splitlines()] == [
        "data/a.csv",
        "data/old/b.csv",
    ]
    assert [line.split()[3] for line in regex.stdout.splitlines()] == ["data/c.json"]
    bad = invoke("watch", bucket_name, "--regex", "(")
    assert bad.exit_code == 2 and "invalid regex" in bad.stderr


def test_live_changes_from_the_executable(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store
) -> None:
    store.put("before.txt", b"old news")  # without --history this is not reported
    proc = subprocess.Popen(
        [str(natsobj_bin), "--url", nats_url, "watch", bucket_name, "--json", "--count", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        ready = proc.stderr.readline()
        assert b"watching" in ready, ready
        assert proc.stdout is not None
        store.put("live/1.txt", b"one")
        # meta records roll up per name: a delete sent before the put is delivered replaces it
        first = proc.stdout.readline()
        store.delete("live/1.txt")
        rest, err = proc.communicate(timeout=30)
        out = first + rest
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert [(d["name"], d["deleted"]) for d in docs] == [
        ("live/1.txt", False),
        ("live/1.txt", True),
    ]
