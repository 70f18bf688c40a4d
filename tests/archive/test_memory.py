"""A large object passes through the archiver in bounded memory: the archiver runs in its own
process (the benchmark's ``archive`` case) so the RSS growth it reports is its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.archive.conftest import REPO

MiB = 1024 * 1024


def archive_rss_growth(store, nats_url: str, archive_url: str, size: int) -> int:
    store.put("large.bin", (os.urandom(MiB) for _ in range(size // MiB)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.archive",
            "archive",
            nats_url,
            store.bucket,
            archive_url,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["versions"] == 1 and figures["bytes"] == size
    return figures["rss_growth"]


def test_256_mib_object_archives_in_under_64_mib_of_rss(nats_url, store, archive_url):
    assert archive_rss_growth(store, nats_url, archive_url, 256 * MiB) < 64 * MiB


@pytest.mark.slow
def test_1_gib_object_archives_in_under_64_mib_of_rss(nats_url, store, archive_url):
    assert archive_rss_growth(store, nats_url, archive_url, 1024 * MiB) < 64 * MiB
