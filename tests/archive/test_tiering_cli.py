"""``natsobj archive offload`` / ``rehydrate`` and ``natsobj ls`` on offloaded objects."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from natsobj.cli.app import cli
from natsobj.cli.params import ByteSize, Duration


def invoke(nats_url: str, *args: str):
    return CliRunner().invoke(cli, ["--url", nats_url, *args], catch_exceptions=False)


def test_cli_offload_dry_run_offload_ls_and_rehydrate(nats_url, store, archive_url):
    big = os.urandom(200_000)
    store.put("raw/big.bin", big)
    store.put("raw/small.bin", b"tiny")
    store.put("other/big.bin", os.urandom(200_000))
    ran = invoke(nats_url, "archive", "run", store.bucket, "--to", archive_url, "--once")
    assert ran.exit_code == 0, ran.output

    dry = invoke(
        nats_url, "archive", "offload", store.bucket, "--glob", "raw/*", "--larger-than", "100kB",
        "--dry-run", "--json",
    )  # fmt: skip
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["offloaded"] == ["raw/big.bin"]
    assert not store.get_info("raw/big.bin").offloaded

    young = invoke(nats_url, "archive", "offload", store.bucket, "--older-than", "30d")
    assert young.exit_code == 0 and "offloaded 0 objects" in young.output

    done = invoke(nats_url, "archive", "offload", store.bucket, "--name", "raw/big.bin")
    assert done.exit_code == 0, done.output
    assert "offloaded raw/big.bin" in done.output  # the target came from the stream metadata
    assert store.get_info("raw/big.bin").offloaded
    assert store.get_bytes("raw/big.bin") == big

    status = json.loads(invoke(nats_url, "archive", "status", store.bucket, "--json").output)
    assert (status["offloaded_objects"], status["offloaded_bytes"]) == (1, len(big))
    store_status = json.loads(invoke(nats_url, "store", "status", store.bucket, "--json").output)
    assert (store_status["offloaded_objects"], store_status["offloaded_bytes"]) == (1, len(big))
    shown = invoke(nats_url, "store", "status", store.bucket).output
    assert "offloaded to S3" in shown and "1 objects" in shown

    listed = invoke(nats_url, "ls", store.bucket, "raw/")
    rows = {line.split()[0]: line for line in listed.output.splitlines()[1:] if line.strip()}
    assert "offloaded" in rows["raw/big.bin"] and "offloaded" not in rows["raw/small.bin"]

    back = invoke(nats_url, "archive", "rehydrate", store.bucket, "raw/big.bin")
    assert back.exit_code == 0, back.output
    assert not store.get_info("raw/big.bin").offloaded
    assert store.get_bytes("raw/big.bin") == big


@pytest.mark.parametrize(
    ("text", "expected"), [("100MB", 10**8), ("2GiB", 2 * 2**30), ("4096", 4096), ("1.5kB", 1500)]
)
def test_byte_sizes(text, expected):
    assert ByteSize().convert(text, None, None) == expected


def test_durations_and_bad_values():
    assert Duration().convert("30d", None, None).days == 30
    assert Duration().convert("90m", None, None).total_seconds() == 5400
    with pytest.raises(Exception, match="not a duration"):
        Duration().convert("soon", None, None)
    with pytest.raises(Exception, match="not a size"):
        ByteSize().convert("lots", None, None)
