"""Local state another user of the machine can touch (issue 21, points 2, 3 and 16).

Another local user is real: ``setpriv`` runs their commands as ``nobody``. A planted
``server.json`` must not send a client (or its credentials) anywhere, a process of another
user must be neither trusted nor signalled, the embedded server must admit only the
credentials of its data directory, and the files that hold them must be private.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import shutil
import socket
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.errors import Error as NatsError

import natsobj
from natsobj.errors import UnsafeLocalState
from natsobj.local import embedded
from natsobj.local.embedded import (
    CREDENTIALS_FILE,
    STATE_FILE,
    NatsServerProcess,
    ensure_server,
    free_port,
    running_server,
    server_binary,
    stop_server,
)
from natsobj.local.embedded_rule import resolve_server
from natsobj.local.name_index import NameIndex, NameIndexUnavailable, StreamIdentity
from natsobj.settings import ConnectionSettings
from tests.cli.cli_support import NATSOBJ_BIN, cli_env
from tests.security.support import assert_no_secret

AS_NOBODY = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
NOBODY = pwd.getpwnam("nobody")
USER, PASSWORD = "alice", "s3cret-alice-pw"


class Listener:
    """An impostor on loopback: greets like a NATS server and records every byte it gets."""

    INFO = b'INFO {"server_id":"impostor","version":"2.10.0","proto":1,"max_payload":1048576}\r\n'

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = bytearray()
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.connections += 1
                with conn:
                    conn.settimeout(2.0)
                    conn.sendall(self.INFO)
                    with contextlib.suppress(OSError):
                        while chunk := conn.recv(65536):
                            self.received += chunk

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    impostor = Listener()
    yield impostor
    impostor.close()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A team directory anyone may write (mode 777), outside pytest's root-only tmp tree."""
    path = Path(tempfile.mkdtemp(prefix="natsobj-shared-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def decoy() -> Iterator[subprocess.Popen[bytes]]:
    """A process of another user that calls itself nats-server."""
    process = subprocess.Popen([*AS_NOBODY, "bash", "-c", "exec -a nats-server sleep 60"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def own_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No data directory from the environment (``.natsobj`` of the working directory is used),
    and credentials for a real server that an impostor would want."""
    for name in [n for n in os.environ if n.startswith("NATS_")] + ["NATSOBJ_DATA_DIR"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("NATS_USER", USER)
    monkeypatch.setenv("NATS_PASSWORD", PASSWORD)


def natsobj_bin() -> Path:
    """The console script pip installed; its absence is a failure, not a skip."""
    assert NATSOBJ_BIN.exists(), f"console script missing at {NATSOBJ_BIN}: pip install -e ."
    return NATSOBJ_BIN


def as_nobody(script: str, *args: str, cwd: Path) -> None:
    subprocess.run([*AS_NOBODY, "sh", "-c", script, "sh", *args], cwd=cwd, check=True)


def plant_record(directory: Path, pid: int, port: int) -> None:
    """As nobody: ``.natsobj/server.json`` naming ``pid`` and the impostor's URL."""
    record = json.dumps({"url": f"nats://127.0.0.1:{port}", "pid": pid, "port": port})
    as_nobody('mkdir -p .natsobj && printf %s "$1" > .natsobj/server.json', record, cwd=directory)


def write_record(data_dir: Path, record: dict) -> None:
    (data_dir / STATE_FILE).unlink(missing_ok=True)
    fd = os.open(data_dir / STATE_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(record, file)


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def connect_raw(url: str, **auth: str) -> None:
    async def go() -> None:
        nc = await nats.connect(url, allow_reconnect=False, max_reconnect_attempts=0, **auth)
        await nc.close()

    asyncio.run(go())


# -- point 2: a planted record redirects nothing --------------------------------------------------


def test_a_planted_record_in_a_shared_directory_gets_no_byte_of_the_credentials(
    shared_dir: Path,
    listener: Listener,
    decoy: subprocess.Popen[bytes],
    own_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plant_record(shared_dir, decoy.pid, listener.port)
    monkeypatch.chdir(shared_dir)
    with pytest.raises(UnsafeLocalState) as refused:
        natsobj.connect()  # no URL: the embedded server of ./.natsobj, with NATS_USER/PASSWORD
    cli = subprocess.run(
        [str(natsobj_bin()), "ls", "any-bucket"], cwd=shared_dir,
        env={**cli_env(), "NATS_USER": USER, "NATS_PASSWORD": PASSWORD},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    message = str(refused.value)
    assert str(shared_dir / ".natsobj") in message and f"uid {NOBODY.pw_uid}" in message
    assert "NATSOBJ_DATA_DIR" in message
    assert cli.returncode != 0 and str(shared_dir / ".natsobj") in cli.stderr, cli.stderr
    assert_no_secret(message + cli.stdout + cli.stderr, [PASSWORD])
    time.sleep(0.2)
    assert listener.connections == 0 and bytes(listener.received) == b""
    assert decoy.poll() is None


@pytest.mark.parametrize(
    "layout",
    ["directory others can write", "record of another user", "record others can write"],
)
def test_a_data_directory_or_record_others_control_is_refused(
    tmp_path: Path, layout: str, listener: Listener, decoy: subprocess.Popen[bytes]
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    write_record(data_dir, {"url": f"nats://127.0.0.1:{listener.port}", "pid": decoy.pid})
    record = data_dir / STATE_FILE
    if layout == "directory others can write":
        data_dir.chmod(0o777)
        culprit, fix = data_dir, f"chmod 700 {data_dir}"
    elif layout == "record of another user":
        os.chown(record, NOBODY.pw_uid, NOBODY.pw_gid)
        culprit, fix = record, f"Remove {record}"
    else:
        record.chmod(0o666)
        culprit, fix = record, f"Remove {record}"
    for attempt in (running_server, stop_server, ensure_server):
        with pytest.raises(UnsafeLocalState) as refused:
            attempt(data_dir)
        assert str(culprit) in str(refused.value) and fix in str(refused.value)
    with pytest.raises(UnsafeLocalState):
        natsobj.connect(f"embedded://{data_dir}", user=USER, password=PASSWORD)
    assert listener.connections == 0 and decoy.poll() is None


def test_the_url_in_the_record_is_never_used(tmp_path: Path, listener: Listener) -> None:
    """Even our own record only names a pid: the port is the one that process listens on."""
    data_dir = tmp_path / "data"
    started = ensure_server(data_dir)
    try:
        impostor = f"nats://127.0.0.1:{listener.port}"
        write_record(data_dir, {"url": impostor, "pid": started.pid, "port": listener.port})
        assert running_server(data_dir) == started
        with natsobj.connect(f"embedded://{data_dir}") as client:
            client.ensure_store("kept").put("a", b"1")
    finally:
        stop_server(data_dir)
    assert listener.connections == 0


def test_a_nats_server_of_another_user_is_neither_trusted_nor_signalled() -> None:
    """A real nats-server run by nobody, with exactly the command line of this directory's
    server, named by the record: not used, and ``serve --stop`` leaves it running."""
    data_dir = Path(tempfile.mkdtemp(prefix="natsobj-theirs-"))
    data_dir.chmod(0o711)  # nobody may pass through to its own store directory, not write here
    store = data_dir / "jetstream"
    store.mkdir()
    os.chown(store, NOBODY.pw_uid, NOBODY.pw_gid)
    port = free_port()
    theirs = subprocess.Popen(
        [*AS_NOBODY, server_binary(), "--jetstream", "--store_dir", str(store),
         "--addr", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port)
        write_record(data_dir, {"url": f"nats://127.0.0.1:{port}", "pid": theirs.pid, "port": port})
        assert running_server(data_dir) is None
        stop = subprocess.run(
            [str(natsobj_bin()), "serve", "--stop", "--data-dir", str(data_dir)],
            env=cli_env(), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert stop.returncode == 0 and "no embedded server is running" in stop.stderr
        assert stop_server(data_dir) is False
        time.sleep(0.3)
        assert theirs.poll() is None, "another user's nats-server was signalled"
        wait_for_port(port, timeout=1)
    finally:
        theirs.kill()
        theirs.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def test_our_nats_server_of_another_directory_is_not_signalled(tmp_path: Path) -> None:
    with NatsServerProcess(tmp_path / "other") as other:
        assert other.pid is not None and other.port is not None
        data_dir = tmp_path / "data"
        data_dir.mkdir(mode=0o700)
        write_record(data_dir, {"url": other.url, "pid": other.pid, "port": other.port})
        assert running_server(data_dir) is None
        assert stop_server(data_dir) is False
        time.sleep(0.3)
        assert other.process is not None and other.process.poll() is None
        assert not (data_dir / STATE_FILE).exists(), "the stale record is removed"


@pytest.mark.parametrize("pid", [2**40, "1", True, None])
def test_a_record_with_a_pid_that_is_no_process_is_stale(
    tmp_path: Path, listener: Listener, pid: object
) -> None:
    """A pid that no process can have (too large, not a number) is a stale record, never a
    crash or a signal. (0 and negative pids, which os.kill would send to whole process
    groups, are refused by the same check; they are not tried here, where a regression
    would signal the test run itself.)"""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    write_record(data_dir, {"url": f"nats://127.0.0.1:{listener.port}", "pid": pid})
    assert running_server(data_dir) is None
    assert stop_server(data_dir) is False
    assert listener.connections == 0


def test_without_proc_a_live_record_is_refused_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no /proc (the proof's only source), nothing is connected to or
    signalled: the process is left alone and the error says what to do."""
    data_dir = tmp_path / "data"
    started = ensure_server(data_dir)
    try:
        monkeypatch.setattr(embedded, "_PROC", tmp_path / "no-proc")
        for attempt in (running_server, stop_server):
            with pytest.raises(UnsafeLocalState, match=r"cannot be proven.*NATS_URL"):
                attempt(data_dir)
        monkeypatch.undo()
        assert running_server(data_dir) == started
    finally:
        stop_server(data_dir)


# -- point 3: credentials per data directory, private files -----------------------------------


def test_the_embedded_server_admits_only_its_own_credentials(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    previous = os.umask(0)  # the modes must not depend on the umask
    try:
        started = ensure_server(data_dir)
    finally:
        os.umask(previous)
    try:
        assert mode(data_dir) == 0o700
        for name in (CREDENTIALS_FILE, STATE_FILE, "server.conf"):
            assert mode(data_dir / name) == 0o600, name
        doc = json.loads((data_dir / CREDENTIALS_FILE).read_text())
        seed = doc["nkey_seed"]
        assert started.credentials is not None and started.credentials.seed == seed
        assert (
            seed.startswith("SU")
            and f'nkey: "{started.credentials.public_key}"'
            in (data_dir / "server.conf").read_text()
        )
        assert_no_secret(repr(started), [seed])

        with pytest.raises(NatsError, match=r"[Aa]uthorization"):
            connect_raw(started.url)
        other = embedded._new_credentials(tmp_path)  # a key of the right kind, not its own
        with pytest.raises(NatsError, match=r"[Aa]uthorization"):
            connect_raw(started.url, nkeys_seed_str=other.seed)
        connect_raw(started.url, nkeys_seed_str=seed)

        resolved = resolve_server(ConnectionSettings.from_url(f"embedded://{data_dir}"))
        assert resolved.nkey_seed == seed and resolved.user is None
        assert_no_secret(repr(resolved) + resolved.redacted_url(), [seed])
        own = ConnectionSettings.from_url(f"embedded://{data_dir}", user=USER, password=PASSWORD)
        assert (resolve_server(own).user, resolve_server(own).password) == (USER, PASSWORD)
        assert resolve_server(own).nkey_seed is None

        reading = subprocess.run(
            [*AS_NOBODY, "cat", str(data_dir / CREDENTIALS_FILE)],
            capture_output=True, check=False,
        )  # fmt: skip
        assert reading.returncode != 0 and seed.encode() not in reading.stdout
    finally:
        stop_server(data_dir)
    again = ensure_server(data_dir)  # a restart keeps the data directory's credentials
    try:
        assert again.credentials == started.credentials
    finally:
        stop_server(data_dir)


def test_an_older_open_server_and_directory_are_closed(tmp_path: Path) -> None:
    """What an older natsobj left: a 0755 data directory and a server without credentials.
    The directory is closed to others and the server restarted with credentials."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    legacy = NatsServerProcess(data_dir, detach=True)
    legacy.start()
    assert legacy.pid is not None
    write_record(data_dir, {"url": legacy.url, "pid": legacy.pid, "port": legacy.port})
    try:
        assert running_server(data_dir) == embedded.ServerInfo(
            legacy.url, legacy.pid, legacy.port, data_dir.resolve()
        )
        started = ensure_server(data_dir)
        assert started.pid != legacy.pid and started.credentials is not None
        assert legacy.process is not None and legacy.process.wait(10) is not None
        assert mode(data_dir) == 0o700
        with pytest.raises(NatsError, match=r"[Aa]uthorization"):
            connect_raw(started.url)
        with natsobj.connect(f"embedded://{data_dir}") as client:
            client.ensure_store("after").put("a", b"1")
    finally:
        legacy.kill()
        stop_server(data_dir)


def test_a_credentials_file_others_can_read_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    ensure_server(data_dir)
    try:
        (data_dir / CREDENTIALS_FILE).chmod(0o644)
        with pytest.raises(UnsafeLocalState, match=r"mode 644.*can read") as refused:
            ensure_server(data_dir)
        assert f"Remove {data_dir / CREDENTIALS_FILE}" in str(refused.value)
        assert stop_server(data_dir), "stopping needs no credentials, so it still works"
    finally:
        stop_server(data_dir)


# -- point 16: the name index cache ---------------------------------------------------------------


def test_the_name_index_cache_is_private(nats_url: str, bucket_name: str, tmp_path: Path) -> None:
    """Object names and meta records kept for listings are for this user only (0700/0600),
    whatever the umask."""
    cache = tmp_path / "fresh" / "natsobj"
    previous = os.umask(0o022)
    try:
        settings = ConnectionSettings.from_url(nats_url, cache_dir=str(cache), name_index="on")
        with natsobj.connect(settings) as client:
            store = client.create_store(bucket_name)
            try:
                store.put("dir/a", b"1")
                assert [info.name for info in store.list(prefix="dir/")] == ["dir/a"]
                directories = {str(p): mode(p) for p in [cache, *cache.rglob("*")] if p.is_dir()}
                files = {str(p): mode(p) for p in cache.rglob("*") if p.is_file()}
            finally:
                client.delete_store(bucket_name)
    finally:
        os.umask(previous)
    assert len(directories) >= 2 and any(p.endswith(".sqlite3") for p in files), files
    assert directories == dict.fromkeys(directories, 0o700)
    assert files == dict.fromkeys(files, 0o600)


def test_the_name_index_write_ahead_log_is_private_too(tmp_path: Path) -> None:
    """SQLite's -wal and -shm files (which exist while an index is open) hold names too."""
    identity = StreamIdentity(("nats://h:4222",), "$JS.API", "", "OBJ_b", "2024-01-01T00:00:00Z")
    previous = os.umask(0o022)
    try:
        index = NameIndex.open(tmp_path / "cache", identity)
    finally:
        os.umask(previous)
    try:
        index.add([("ZGlyL2E=", 1, None, b"{}")], complete_seq=1)
        files = sorted(p.name[-4:] for p in (tmp_path / "cache").rglob("*") if p.is_file())
        assert files == ["-shm", "-wal", "ite3"]
        assert {mode(p) for p in (tmp_path / "cache").rglob("*") if p.is_file()} == {0o600}
    finally:
        index.close()


# -- issue 28 point 11: a name index another user can write ---------------------------------------


def _natsobj(nats_url: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(natsobj_bin()), "--url", nats_url, *args],
        env={**cli_env(), "NATSOBJ_CACHE_DIR": str(cache), "NATSOBJ_NAME_INDEX": "on"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_planted_name_index_hides_no_object_and_costs_no_local_file(
    nats_url: str,
    store,
    bucket_name: str,
    shared_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another user pre-creates the shared cache directory and renames an index without
    ``data/b`` over the victim's: ``ls`` and ``sync --delete`` must still see ``data/b`` (the
    index is refused, the listing asks the server, and the library says why in one warning;
    the CLI shows library warnings only with --debug)."""
    store.put("data/a", b"A")
    store.put("data/b", b"B")
    # The planted file: a real index of this bucket (its name and identity are public
    # knowledge), complete up to the last sequence, with data/b taken out.
    private = tmp_path / "private-cache"
    assert _natsobj(nats_url, private, "ls", bucket_name, "data/").returncode == 0
    (built,) = private.glob("names-v*/*.sqlite3")
    with contextlib.closing(sqlite3.connect(built)) as db, db:
        assert db.execute("DELETE FROM names WHERE name = 'data/b'").rowcount == 1
    planted = shared_dir / "planted"
    shutil.copyfile(built, planted)
    os.chown(planted, NOBODY.pw_uid, NOBODY.pw_gid)
    cache = shared_dir / "natsobj"
    index_dir = cache / built.parent.name
    as_nobody('mkdir -p "$1" && chmod 777 "$2" "$1"', str(index_dir), str(cache), cwd=shared_dir)

    _natsobj(nats_url, cache, "ls", bucket_name, "data/")  # the victim's index, if any is made
    as_nobody('mv -f "$1" "$2"', str(planted), str(index_dir / built.name), cwd=shared_dir)
    listed = _natsobj(nats_url, cache, "ls", bucket_name, "data/")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "b").write_bytes(b"B")
    synced = _natsobj(
        nats_url, cache, "sync", "--delete", f"nats://{bucket_name}/data", str(mirror)
    )
    settings = ConnectionSettings.from_url(nats_url, cache_dir=str(cache), name_index="on")
    with caplog.at_level(logging.WARNING, logger="natsobj"), natsobj.connect(settings) as client:
        victim = client.store(bucket_name)
        listings = [[i.name for i in victim.list(prefix="data/")] for _ in range(2)]

    assert listed.returncode == 0 and "data/b" in listed.stdout.split(), listed.stdout
    assert synced.returncode == 0, synced.stderr
    assert (mirror / "b").read_bytes() == b"B" and (mirror / "a").read_bytes() == b"A"
    assert listings == [["data/a", "data/b"]] * 2
    warnings = [r.getMessage() for r in caplog.records if "name index" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert str(cache) in warnings[0] and f"uid {NOBODY.pw_uid}" in warnings[0]


@pytest.mark.parametrize(
    "layout",
    [
        "cache directory of another user",
        "cache directory others can write",
        "index directory others can write",
        "index file of another user",
        "index file others can write",
    ],
)
def test_a_name_index_others_control_is_refused(tmp_path: Path, layout: str) -> None:
    identity = StreamIdentity(("nats://h:4222",), "$JS.API", "", "OBJ_b", "2024-01-01T00:00:00Z")
    cache = tmp_path / "cache"
    NameIndex.open(cache, identity).close()  # made by this user, as a first listing would
    (index_file,) = cache.glob("names-v*/*.sqlite3")
    culprit = {
        "cache directory of another user": cache,
        "cache directory others can write": cache,
        "index directory others can write": index_file.parent,
    }.get(layout, index_file)
    if "another user" in layout:
        os.chown(culprit, NOBODY.pw_uid, NOBODY.pw_gid)
    else:
        culprit.chmod(0o777 if culprit.is_dir() else 0o666)

    with pytest.raises(NameIndexUnavailable) as refused:
        NameIndex.open(cache, identity)

    assert str(culprit) in str(refused.value) and "NATSOBJ_CACHE_DIR" in str(refused.value)


def test_setpriv_really_runs_as_another_user() -> None:
    """The other-user tests mean something only if setpriv changes the uid."""
    whoami = subprocess.run([*AS_NOBODY, "id", "-u"], capture_output=True, text=True, check=True)
    assert int(whoami.stdout) == NOBODY.pw_uid != os.getuid()
