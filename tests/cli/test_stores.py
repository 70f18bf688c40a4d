"""``natsobj stores`` and ``natsobj store ...`` against a real server."""

from __future__ import annotations

import json

from cli_support import Invoke, publish_raw

from natsobj.cli.exits import ExitCode


def test_create_status_list_seal_and_remove(invoke: Invoke, bucket_name: str, sync_client) -> None:
    created = invoke(
        "store", "create", bucket_name, "--description", "daily reports",
        "--metadata", "team=data", "--ttl", "3600", "--max-bytes", "10000000", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.stderr
    status = json.loads(created.stdout)
    assert status["bucket"] == bucket_name
    assert status["description"] == "daily reports"
    assert status["metadata"] == {"team": "data"}
    assert status["ttl_seconds"] == 3600
    assert status["max_bytes"] == 10_000_000

    again = invoke("store", "create", bucket_name)
    assert again.exit_code == ExitCode.FAILED
    assert bucket_name in again.stderr

    listed = invoke("stores", "--json")
    assert listed.exit_code == 0
    assert bucket_name in [s["bucket"] for s in json.loads(listed.stdout)]

    table = invoke("stores")
    row = next(line for line in table.stdout.splitlines() if line.startswith(bucket_name))
    assert "daily reports" in row and "3600s" in row

    human = invoke("store", "status", bucket_name)
    assert "max bytes" in human.stdout and "9.5 MiB" in human.stdout

    sealed = invoke("store", "seal", bucket_name)
    assert sealed.exit_code == 0
    assert json.loads(invoke("store", "status", bucket_name, "--json").stdout)["sealed"] is True
    refused = invoke("put", bucket_name, "late.txt", "-", input=b"too late")
    assert refused.exit_code == ExitCode.FAILED
    assert "sealed" in refused.stderr.lower()

    declined = invoke("store", "rm", bucket_name, input="n\n")
    assert declined.exit_code == ExitCode.FAILED  # aborted at the prompt, as click does
    assert bucket_name in sync_client.store_names()

    removed = invoke("store", "rm", bucket_name, "--yes")
    assert removed.exit_code == 0
    assert bucket_name not in sync_client.store_names()
    assert invoke("store", "status", bucket_name).exit_code == ExitCode.NOT_FOUND


def test_compact_reports_what_it_reclaimed(
    invoke: Invoke, nats_url: str, bucket_name: str, store
) -> None:
    store.put("kept.bin", b"k" * 1000)
    nothing = invoke("store", "compact", bucket_name, "--min-age", "0", "--json")
    assert nothing.exit_code == 0, nothing.stderr
    report = json.loads(nothing.stdout)
    assert report["purged_subjects"] == [] and report["reclaimed_bytes"] == 0

    # an interrupted put: chunks on the wire, no meta record pointing at them
    orphan_subject = f"$O.{bucket_name}.C.orphannuid0001"
    publish_raw(nats_url, orphan_subject, b"o" * 5000)

    young = invoke("store", "compact", bucket_name, "--json")  # default min_age keeps it
    assert json.loads(young.stdout)["skipped_recent"] == 1

    text = invoke("store", "compact", bucket_name, "--min-age", "0")
    assert text.exit_code == 0
    assert "purged 1 orphaned chunk subjects" in text.stdout
    assert store.get_bytes("kept.bin") == b"k" * 1000
