"""docs/production.md's table of bounds after a lost server quotes the constants the code uses."""

from __future__ import annotations

import inspect
from pathlib import Path

from natsobj.aio import client as aio_client
from natsobj.aio.jsapi import DEFAULT_FAILOVER_TIMEOUT
from natsobj.aio.socket_reads import HEADER_ROOM

DOC = (Path(__file__).resolve().parents[1] / "docs" / "production.md").read_text()


def test_the_documented_bounds_are_the_code_s():
    api_timeout = inspect.signature(aio_client.connect).parameters["api_timeout"].default
    assert f"`api_timeout` (default {api_timeout:g} s)" in DOC
    assert f"`failover_timeout` (default {DEFAULT_FAILOVER_TIMEOUT:g} s)" in DOC
    assert f"`T` + {aio_client.CLOSE_GRACE_SECONDS:g} s" in DOC
    assert f"({aio_client.RECONNECT_ATTEMPTS} attempts 0.5 s apart" in DOC
    assert f"plus\n  {HEADER_ROOM // 1024} KiB for the headers" in DOC
