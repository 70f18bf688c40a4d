"""Streaming keeps memory flat: a large object goes file -> store -> file in a few MiB.

Each case runs in a fresh process (benchmarks.core) so the RSS it reports is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


def rss_growth(url: str, path: Path, size: int) -> int:
    with path.open("wb") as handle:
        for _ in range(size // (64 * MiB)):
            handle.write(b"\xa5" * (64 * MiB))
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.core", "ours", url, str(size), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    path.unlink()
    return json.loads(result.stdout.strip().splitlines()[-1])["rss_growth"]


def test_256_mib_round_trip_stays_under_64_mib_of_rss(nats_url, tmp_path):
    assert rss_growth(nats_url, tmp_path / "big.bin", 256 * MiB) < 64 * MiB


@pytest.mark.slow
def test_1_gib_round_trip_stays_under_64_mib_of_rss(nats_url, tmp_path):
    assert rss_growth(nats_url, tmp_path / "huge.bin", 1024 * MiB) < 64 * MiB
