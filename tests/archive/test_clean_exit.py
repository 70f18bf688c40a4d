"""The archive commands exit cleanly, every time (issue 24): ``archive verify``, ``archive
status`` and ``ls`` run as separate processes, one after another, against a small archive on
moto's S3 server, and each run must exit 0. Interpreter finalization racing obstore's native
threads used to abort about one run in four (exit 134) after a correct result; see
natsobj.archive.native_exit. ``NATSOBJ_CLEAN_EXIT_RUNS`` sets the number of runs of each
command (10 here; the issue's check is 200, run by hand)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
from click.testing import CliRunner

from natsobj.cli.app import cli

RUNS = int(os.environ.get("NATSOBJ_CLEAN_EXIT_RUNS", "10"))
COMMANDS = {
    "archive verify": lambda bucket, url: ["archive", "verify", url],
    "archive status": lambda bucket, url: ["archive", "status", bucket],
    "ls": lambda bucket, url: ["ls", bucket],
}


@pytest.mark.timeout(60 + RUNS * 10)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_exits_zero_every_time(command: str, nats_url: str, store, archive_url: str) -> None:
    store.put("a", b"alpha")
    store.put("b", os.urandom(50_000))
    archived = CliRunner().invoke(
        cli, ["--url", nats_url, "archive", "run", store.bucket, "--to", archive_url, "--once"]
    )
    assert archived.exit_code == 0, archived.output
    args = [sys.executable, "-m", "natsobj.cli", "--url", nats_url]
    args += COMMANDS[command](store.bucket, archive_url)
    codes: Counter[int] = Counter()
    last_error = ""
    for _ in range(RUNS):
        result = subprocess.run(args, capture_output=True, text=True, timeout=60)
        codes[result.returncode] += 1
        if result.returncode != 0:
            last_error = result.stderr[-2000:]
    assert codes == Counter({0: RUNS}), f"{command}: exit codes {dict(codes)}\n{last_error}"
