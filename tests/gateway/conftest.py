"""A gateway on a real nats-server for the module, run in a thread of its own (boto3 blocks),
and boto3 clients pointed at it."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from natsobj.gateway import Running, start
from natsobj.settings import ConnectionSettings

ACCESS_KEY = "AKIANATSOBJTEST"
SECRET = "natsobj-test-secret"


class GatewayThread:
    """The gateway's event loop in a daemon thread; ``stop`` ends both."""

    def __init__(
        self, nats_url: str, credentials: Path, *, tls: ssl.SSLContext | None = None
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        settings = ConnectionSettings.coerce(nats_url)
        self.running: Running = asyncio.run_coroutine_threadsafe(
            start(settings, credentials, listen="127.0.0.1:0", tls=tls), self.loop
        ).result(timeout=30)

    @property
    def endpoint(self) -> str:
        return self.running.endpoint

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.running.stop(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def write_credentials(folder: Path) -> Path:
    """A gateway credentials file in ``folder`` holding the one test key."""
    path = folder / "keys.toml"
    path.write_text(f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n')
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def credentials_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_credentials(tmp_path_factory.mktemp("gateway"))


@pytest.fixture(scope="module")
def gateway(nats_url: str, credentials_file: Path) -> Iterator[GatewayThread]:
    running = GatewayThread(nats_url, credentials_file)
    yield running
    running.stop()


def make_s3(  # type: ignore[no-untyped-def]
    endpoint: str, *, access_key: str = ACCESS_KEY, secret: str = SECRET, verify: str | None = None
):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        verify=verify,
        config=Config(
            s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version="s3v4"
        ),
    )


@pytest.fixture(scope="module")
def s3(gateway: GatewayThread):  # type: ignore[no-untyped-def]
    return make_s3(gateway.endpoint)
