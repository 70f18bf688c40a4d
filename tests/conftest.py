"""Session fixtures: a real JetStream nats-server on a free loopback port, and fresh buckets."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from natsobj.local.embedded import NatsServerProcess, stop_server

# One definition of the 3-node cluster fixtures for every directory (a module that imported
# them would get its own session cluster).
pytest_plugins = ["tests.cluster.fixtures"]


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    """A real JetStream nats-server for the session; fails (never skips) without the binary."""
    server = NatsServerProcess(tmp_path_factory.mktemp("nats-server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def nats_url(nats_server: NatsServerProcess) -> str:
    return nats_server.url


@pytest.fixture
def bucket_name() -> str:
    """A unique bucket name per test, so tests never see each other's objects."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sync_client(nats_url: str) -> Iterator:
    import natsobj

    client = natsobj.connect(nats_url)
    yield client
    client.close()


@pytest.fixture
def store(sync_client, bucket_name: str):
    """A fresh bucket through the blocking facade; deleted after the test."""
    created = sync_client.create_store(bucket_name)
    yield created
    with contextlib.suppress(Exception):
        sync_client.delete_store(bucket_name)


@pytest.fixture
def isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NATSOBJ_DATA_DIR", str(tmp_path / ".natsobj"))
    return tmp_path


# a name no nats-py has: a check that expects it finds the internals missing
NATS_PY_GONE = "_renamed_by_a_later_nats_py"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--nats-py-stock",
        action="store_true",
        help="run with natsobj's fast paths under nats-py's public API switched off, as a"
        " nats-py without the internals they use would (make test-stock-nats-py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--nats-py-stock"):
        from natsobj.aio.jetstream import jsapi, nats_internals, socket_reads

        def stock_only(path: str, owner: object, names: Iterable[str]) -> bool:
            """``internals_present`` as a nats-py without any of the internals answers."""
            return nats_internals.internals_present(path, owner, [*names, NATS_PY_GONE])

        jsapi.internals_present = socket_reads.internals_present = stock_only
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    # Under pytest-xdist every worker inherits the controller's directories; each takes its
    # own, so one worker's `serve --stop-all` or embedded server never meets another's.
    own = "PYTEST_XDIST_WORKER" in os.environ
    # A process of the run that resolves "embedded" without a data dir of its own (a
    # subprocess started in the repository) starts its detached server here, not in the
    # checkout's ./.natsobj, and the run stops it at the end instead of leaving it running.
    if own or "NATSOBJ_DATA_DIR" not in os.environ:
        data_dir = Path(tempfile.mkdtemp(prefix="natsobj-data-")) / ".natsobj"
        os.environ["NATSOBJ_DATA_DIR"] = str(data_dir)
        config.add_cleanup(functools.partial(shutil.rmtree, data_dir.parent, ignore_errors=True))
        config.add_cleanup(functools.partial(_stop_left_behind, data_dir))
    # the registry of embedded servers (serve --list/--stop-all) is the run's own, not ~/.local
    if own or "XDG_STATE_HOME" not in os.environ:
        state = tempfile.mkdtemp(prefix="natsobj-state-")
        os.environ["XDG_STATE_HOME"] = state
        config.add_cleanup(functools.partial(shutil.rmtree, state, ignore_errors=True))
    # the listings' name indexes (natsobj.local.name_index) go to a directory of the run, not
    # ~/.cache
    if own or "NATSOBJ_CACHE_DIR" not in os.environ:
        cache = tempfile.mkdtemp(prefix="natsobj-cache-")
        os.environ["NATSOBJ_CACHE_DIR"] = cache
        config.add_cleanup(functools.partial(shutil.rmtree, cache, ignore_errors=True))


@pytest.fixture
def raw(nats_url: str):
    """Raw nats-py JetStream access, for checking the wire format."""
    from tests.raw import RawJetStream

    client = RawJetStream(nats_url)
    yield client
    client.close()


def _stop_left_behind(data_dir: Path) -> None:
    if stop_server(data_dir):
        log_file = data_dir / "server.log"
        started = log_file.read_text().splitlines()[:1] if log_file.exists() else []
        print(f"\nstopped an embedded nats-server a test left running in {data_dir}: {started}")
