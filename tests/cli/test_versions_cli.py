"""Object versions on the command line against a real server (docs/versioning.md, docs/cli.md):
``store versioning``, ``ls --versions``, ``--version-id`` on ``get``, ``cat``, ``info`` and
``rm``, and ``restore``; each reads or removes exactly the version it names, never another's
bytes, and says which bucket, object and version when it cannot."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Invoke, lines

from natsobj.cli.exits import ExitCode
from natsobj.names import chunk_subject
from natsobj.sync import run
from natsobj.versioning import Versioning

NOT_AN_ID = "0123456789abcdefghijkZ"  # an id's shape, of no version


def _three_versions(invoke: Invoke, bucket: str, store) -> list[str]:
    """Versioning turned on through the CLI, then three puts of one name: their ids."""
    done = invoke("store", "versioning", bucket, "enabled")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == f"versioning of bucket {bucket}: Enabled"
    # this handle follows within REFRESH_SECONDS, as another process does; now, when asked
    assert store.versioning() is Versioning.ENABLED
    return [store.put("report.csv", body).nuid for body in (b"one", b"two!", b"three")]


def test_store_versioning_shows_and_sets_the_state(invoke: Invoke, bucket_name, store) -> None:
    shown = invoke("store", "versioning", bucket_name, "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout) == {"bucket": bucket_name, "status": None}
    assert "never enabled" in invoke("store", "versioning", bucket_name).stdout
    assert invoke("store", "versioning", bucket_name, "Enabled").exit_code == 0
    assert store.versioning() is Versioning.ENABLED
    suspended = invoke("store", "versioning", f"nats://{bucket_name}", "SUSPENDED")
    assert suspended.exit_code == 0, suspended.stderr
    assert store.versioning() is Versioning.SUSPENDED
    assert json.loads(invoke("store", "versioning", bucket_name, "--json").stdout) == {
        "bucket": bucket_name,
        "status": "Suspended",
    }
    bad = invoke("store", "versioning", bucket_name, "off")
    assert bad.exit_code == ExitCode.USAGE and "off" in bad.stderr
    missing = invoke("store", "versioning", bucket_name + "-none")
    assert missing.exit_code == ExitCode.NOT_FOUND


def test_ls_versions_lists_every_version_newest_first(invoke: Invoke, bucket_name, store) -> None:
    ids = _three_versions(invoke, bucket_name, store)
    store.put("other/x.bin", b"x")
    marker = store.delete("other/x.bin")
    doc = json.loads(invoke("ls", bucket_name, "--versions", "--json").stdout)
    rows = [
        (v["name"], v["version_id"], v["is_latest"], v["delete_marker"]) for v in doc["versions"]
    ]
    assert rows[:2] == [
        ("other/x.bin", marker.nuid, True, True),
        ("other/x.bin", rows[1][1], False, False),
    ]
    assert rows[2:] == [
        ("report.csv", ids[2], True, False),
        ("report.csv", ids[1], False, False),
        ("report.csv", ids[0], False, False),
    ]
    assert [v["size"] for v in doc["versions"][2:]] == [5, 4, 3]
    assert all(v["mtime"] and v["lost"] is False for v in doc["versions"])

    table = invoke("ls", bucket_name, "report.csv", "--versions")
    assert table.exit_code == 0, table.stderr
    head, _rule, *body = lines(table.stdout)
    assert head.split() == [
        "NAME",
        "VERSION",
        "ID",
        "LATEST",
        "DELETE",
        "MARKER",
        "SIZE",
        "MODIFIED",
    ]
    assert [row.split()[1] for row in body] == ids[::-1]
    assert "yes" in body[0] and "yes" not in body[1]
    summary = invoke("ls", bucket_name, "--versions", "--summarize")
    assert "Total Versions: 4" in summary.stdout and "Total Size: 13" in summary.stdout

    missing = invoke("ls", bucket_name, "nope", "--versions")
    assert missing.exit_code == ExitCode.NOT_FOUND and "nope" in missing.stderr
    assert invoke("ls", "--versions").exit_code == ExitCode.USAGE


def test_a_lost_version_is_marked_and_never_read(invoke: Invoke, bucket_name, store) -> None:
    ids = _three_versions(invoke, bucket_name, store)
    run(store.aio.bucket_stream.purge(chunk_subject(bucket_name, ids[0])))
    table = invoke("ls", bucket_name, "--versions")
    assert lines(table.stdout)[0].split()[-1] == "LOST"
    lost_row = next(row for row in lines(table.stdout)[2:] if ids[0] in row)
    assert lost_row.split()[-1] == "yes"
    doc = json.loads(invoke("ls", bucket_name, "--versions", "--json").stdout)
    assert [v["lost"] for v in doc["versions"]] == [False, False, True]
    read = invoke("cat", bucket_name, "report.csv", "--version-id", ids[0])
    assert read.exit_code == ExitCode.NOT_FOUND
    assert read.stdout == ""
    assert bucket_name in read.stderr and "report.csv" in read.stderr
    assert ids[0] in read.stderr and "lost" in read.stderr


def test_get_cat_and_info_read_the_version_named(
    invoke: Invoke, bucket_name, store, tmp_path: Path
) -> None:
    ids = _three_versions(invoke, bucket_name, store)
    for version_id, body in zip(ids, (b"one", b"two!", b"three"), strict=True):
        cat = invoke("cat", f"nats://{bucket_name}/report.csv", "--version-id", version_id)
        assert cat.exit_code == 0, cat.stderr
        assert cat.stdout_bytes == body
        out = tmp_path / f"{version_id}.csv"
        got = invoke("get", bucket_name, "report.csv", str(out), "--version-id", version_id)
        assert got.exit_code == 0, got.stderr
        assert out.read_bytes() == body
        ranged = invoke(
            "get", bucket_name, "report.csv", "-", "--version-id", version_id, "--range", "1-2"
        )
        assert ranged.stdout_bytes == body[1:3]
        info = json.loads(
            invoke("info", bucket_name, "report.csv", "--version-id", version_id, "--json").stdout
        )
        assert (info["nuid"], info["size"]) == (version_id, len(body))
    null = invoke("cat", bucket_name, "report.csv", "--version-id", "null")
    assert null.stdout_bytes == b"three"  # S3's null: the current version


def test_a_version_that_is_not_there_is_said_and_nothing_is_written(
    invoke: Invoke, bucket_name, store, tmp_path: Path
) -> None:
    _three_versions(invoke, bucket_name, store)
    out = tmp_path / "out.csv"
    missing = invoke("get", bucket_name, "report.csv", str(out), "--version-id", NOT_AN_ID)
    assert missing.exit_code == ExitCode.NOT_FOUND
    assert f"bucket {bucket_name!r}" in missing.stderr and "report.csv" in missing.stderr
    assert NOT_AN_ID in missing.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []
    for bad in ("*", "a.b", "x" * 23, ""):
        refused = invoke("cat", bucket_name, "report.csv", "--version-id", bad)
        assert refused.exit_code == ExitCode.USAGE, bad
        assert "--version-id" in refused.stderr and "version id" in refused.stderr
    recursive = invoke("get", "-r", bucket_name, "", str(tmp_path), "--version-id", NOT_AN_ID)
    assert recursive.exit_code == ExitCode.USAGE and "-r" in recursive.stderr


def test_rm_version_id_removes_that_version_for_good(invoke: Invoke, bucket_name, store) -> None:
    ids = _three_versions(invoke, bucket_name, store)
    dry = invoke("rm", bucket_name, "report.csv", "--version-id", ids[1], "--dry-run")
    assert dry.exit_code == 0 and ids[1] in dry.stdout
    assert [v.version_id for v in store.versions()] == ids[::-1]

    done = invoke("rm", bucket_name, "report.csv", "--version-id", ids[1])
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == f"removed version {ids[1]} of {bucket_name}/report.csv for good"
    assert [v.version_id for v in store.versions()] == [ids[2], ids[0]]
    assert store.get_bytes("report.csv") == b"three"  # the current version untouched
    with store.get("report.csv", version=ids[0]) as reader:
        assert reader.read() == b"one"  # and the other kept one

    marker = store.delete("report.csv")
    undelete = invoke("rm", bucket_name, "report.csv", "--version-id", marker.nuid)
    assert undelete.exit_code == 0, undelete.stderr
    assert "delete marker" in undelete.stdout
    assert store.get_bytes("report.csv") == b"three"

    again = invoke("rm", bucket_name, "report.csv", "--version-id", ids[1])
    assert again.exit_code == ExitCode.NOT_FOUND and ids[1] in again.stderr
    for extra in (("-r",), ("other.csv",)):
        refused = invoke("rm", bucket_name, "report.csv", *extra, "--version-id", ids[0])
        assert refused.exit_code == ExitCode.USAGE and "one object" in refused.stderr
    glob = invoke("rm", bucket_name, "*.csv", "--version-id", ids[0])
    assert glob.exit_code == ExitCode.USAGE
    assert [v.version_id for v in store.versions()] == [ids[2], ids[0]]


def test_restore_copies_the_version_over_the_current_one(
    invoke: Invoke, bucket_name, store
) -> None:
    ids = _three_versions(invoke, bucket_name, store)
    done = invoke("restore", f"nats://{bucket_name}/report.csv", "--version-id", ids[0])
    assert done.exit_code == 0, done.stderr
    assert f"from version {ids[0]}" in done.stdout
    assert store.get_bytes("report.csv") == b"one"
    listed = store.versions()
    assert [v.version_id for v in listed[1:]] == ids[::-1]  # every version kept
    assert listed[0].version_id in done.stdout and listed[0].version_id not in ids

    needs_id = invoke("restore", bucket_name, "report.csv")
    assert needs_id.exit_code == ExitCode.USAGE and "--version-id" in needs_id.stderr
    marker = store.delete("report.csv")
    refused = invoke("restore", bucket_name, "report.csv", "--version-id", marker.nuid)
    assert refused.exit_code == ExitCode.NOT_FOUND and "delete marker" in refused.stderr
    assert store.versions()[0].version_id == marker.nuid  # nothing written
