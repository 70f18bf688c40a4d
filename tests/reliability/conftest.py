"""Reliability tests get their own server, because they kill and restart it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess


@pytest.fixture
def own_server(tmp_path) -> Iterator[NatsServerProcess]:
    server = NatsServerProcess(tmp_path / "server")
    server.start()
    yield server
    server.kill()


@pytest.fixture
def own_client(own_server) -> Iterator[natsobj.Client]:
    client = natsobj.connect(own_server.url, api_timeout=2.0)
    yield client
    client.close()
