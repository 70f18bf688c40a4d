"""``natsobj gateway`` as a user runs it: a process that serves until SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.gateway.conftest import make_s3


def test_gateway_command_serves_until_sigterm(nats_url: str, credentials_file: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "natsobj.cli",
            "--url",
            nats_url,
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--credentials",
            str(credentials_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("S3 gateway on http://127.0.0.1:"), line
        s3 = make_s3(line.split()[-1])
        s3.create_bucket(Bucket="gw-cli")
        s3.put_object(Bucket="gw-cli", Key="k", Body=b"through the command")
        assert s3.get_object(Bucket="gw-cli", Key="k")["Body"].read() == b"through the command"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
