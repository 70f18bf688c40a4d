"""docs/production.md's table of bounds after a lost server quotes the constants the code uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from natsobj.aio import client as aio_client
from natsobj.aio.jetstream.socket_reads import HEADER_ROOM
from natsobj.settings import ConnectionSettings

pytestmark = pytest.mark.unit

DOC = (Path(__file__).resolve().parents[2] / "docs" / "production.md").read_text()


def test_the_documented_bounds_are_the_code_s():
    defaults = ConnectionSettings()
    assert f"`api_timeout` (default {defaults.api_timeout:g} s)" in DOC
    assert f"`failover_timeout` (default {defaults.failover_timeout:g} s)" in DOC
    assert f"`T` + {aio_client.CLOSE_GRACE_SECONDS:g} s" in DOC
    assert f"({aio_client.RECONNECT_ATTEMPTS} attempts 0.5 s apart" in DOC
    assert f"plus\n  {HEADER_ROOM // 1024} KiB for the headers" in DOC
