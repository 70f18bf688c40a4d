"""A real S3 endpoint for the archive tests: moto in server mode, as a separate process on a
free loopback port, with a fresh S3 bucket per test. Nothing is mocked in Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from natsobj.local.embedded import free_port

REPO = Path(__file__).resolve().parents[2]


@dataclass
class MotoServer:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_moto(log_dir: Path, port: int | None = None) -> MotoServer:
    """Fails (never skips) when moto's server is not installed. ``port`` restarts a stopped
    server where it was (its state, kept in memory, is gone)."""
    binary = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    assert binary, "moto_server is missing: install the dev extra (moto[server])"
    port = port or free_port()
    log = (log_dir / f"moto-{port}.log").open("ab")
    process = subprocess.Popen(
        [binary, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, f"moto_server exited, see {log.name}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return MotoServer(port, process)
        time.sleep(0.1)
    process.kill()
    raise AssertionError("moto_server did not start listening within 30 s")


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "archive-test-key",
    "AWS_SECRET_ACCESS_KEY": "archive-test-secret",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def stop_moto(server: MotoServer) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        server.process.wait(10)


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = start_moto(tmp_path_factory.mktemp("moto"))
    yield server
    stop_moto(server)


@pytest.fixture
def second_moto(tmp_path: Path) -> Iterator[MotoServer]:
    """Another S3 endpoint, this test's own, for archives on several targets: the test may
    stop it (``process.kill()``) and start it again on its port (stopping that one itself)."""
    server = start_moto(tmp_path)
    yield server
    stop_moto(server)


def s3_client(endpoint: str | None = None):
    """boto3, for what the tests check behind the archiver's back."""
    import boto3

    return boto3.client(
        "s3", endpoint_url=endpoint or os.environ["AWS_ENDPOINT_URL"], **_boto_credentials()
    )


def create_s3_bucket(endpoint: str) -> str:
    name = f"archive-{uuid.uuid4().hex[:12]}"
    s3_client(endpoint).create_bucket(Bucket=name)
    return name


def _boto_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": S3_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": S3_ENV["AWS_SECRET_ACCESS_KEY"],
        "region_name": S3_ENV["AWS_REGION"],
    }


@pytest.fixture
def s3_env(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The standard AWS variables pointing at moto, set for this process and its children."""
    env = {**S3_ENV, "AWS_ENDPOINT_URL": moto.endpoint}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def archive_url(moto: MotoServer, s3_env: dict[str, str]) -> str:
    return f"s3://{create_s3_bucket(moto.endpoint)}/nats/archive"


def subprocess_env(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra}
