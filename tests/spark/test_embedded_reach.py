"""``url=embedded`` with executors in other processes: the driver resolves it once to its own
server, and a task that cannot reach that server (an executor on another machine) fails at
once with what to set instead, rather than starting a server of its own or hanging."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest

from natsobj.local.embedded import running_server, stop_server
from natsobj.spark.errors import EmbeddedServerUnreachable
from natsobj.spark.options import SourceOptions
from natsobj.spark.storage import open_store


def test_embedded_is_resolved_once_on_the_driver(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    try:
        opts = SourceOptions.parse({"url": f"embedded://{data_dir}", "bucket": "b", "path": "d"})
        server = running_server(data_dir)
        assert server is not None
        shipped = pickle.loads(pickle.dumps(opts))  # what executors receive
        assert shipped.settings.servers == [server.url]
        assert shipped.embedded == f"embedded://{data_dir}"
    finally:
        stop_server(data_dir)


def test_a_task_that_cannot_reach_the_drivers_embedded_server_says_what_to_set(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    opts = SourceOptions.parse({"url": f"embedded://{data_dir}", "bucket": "b", "path": "d"})
    stop_server(data_dir)  # from the executor's side, nothing listens there: another machine
    shipped = pickle.loads(pickle.dumps(opts))
    started = time.monotonic()
    with pytest.raises(EmbeddedServerUnreachable) as caught, open_store(shipped):
        pass
    assert time.monotonic() - started < 30, "the task hung instead of failing"
    message = str(caught.value)
    assert shipped.settings.servers[0] in message and f"embedded://{data_dir}" in message
    assert "set option url to a NATS server every executor can reach" in message
    assert running_server(data_dir) is None, "the task started a server of its own"
