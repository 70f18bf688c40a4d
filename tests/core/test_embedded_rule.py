"""The embedded-server rule every face shares (issue 28, point 13): with no URL, ``NATS_URL``,
else the embedded server already running for this directory, else a typed NoServer that says
how to start one; a server is started only for the URL ``embedded``, with a warning that says
where it runs and how to stop it; ``natsobj serve --list`` / ``--stop-all`` find every one of
this user's servers. And a misspelt option is refused on every face, naming the known ones."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fsspec
import pytest

from dagster_natsobj import NatsObjectStoreResource
from natsobj.errors import UnknownOption
from natsobj.local.embedded import running_server, stop_server
from natsobj.settings import ConnectionSettings
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.options import SourceOptions

NO_URL_EVERYWHERE = textwrap.dedent(
    """
    import fsspec
    import natsobj
    from dagster_natsobj import NatsObjectStoreResource
    from natsobj.spark.options import SourceOptions

    faces = {
        "connect": lambda: natsobj.connect(),
        "dagster": lambda: NatsObjectStoreResource().get_client().__enter__(),
        "fsspec": lambda: fsspec.filesystem("nats", skip_instance_cache=True).ls("rule"),
        "spark": lambda: SourceOptions.parse({"bucket": "rule", "path": "p"}),
    }
    for face, call in faces.items():
        try:
            call()
        except Exception as exc:
            print("REFUSED", face, type(exc).__name__, str(exc).replace("\\n", " "))
        else:
            print("CONNECTED", face)
    """
)

EMBEDDED_ASKED_THEN_NO_URL = textwrap.dedent(
    """
    import logging
    import fsspec
    import natsobj
    from dagster_natsobj import NatsObjectStoreResource

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    with natsobj.connect("embedded") as client:  # asked: started, and said so
        client.ensure_store("rule")
    with NatsObjectStoreResource(url="embedded").get_client() as client:
        client.cached_store("rule").put("a", b"1")
    # no URL from here on: the server that now runs here
    print("LISTED", fsspec.filesystem("nats", skip_instance_cache=True).ls("rule", detail=False))
    with NatsObjectStoreResource().get_client() as client:
        print("GOT", client.cached_store("rule").get_bytes("a"))
    """
)


def no_nats_env(tmp_path: Path, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env["NATSOBJ_DATA_DIR"] = str(data_dir)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # this test's registry of servers
    return env


def servers_serving(data_dir: Path) -> list[int]:
    """Every process whose command line names ``data_dir``: a nats-server serving it."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(str(data_dir).encode() in arg for arg in argv[1:]):
                found.append(int(proc.name))
    return found


def run(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def natsobj_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "natsobj.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_no_url_and_no_running_server_is_no_server_on_every_face(tmp_path: Path):
    data_dir = tmp_path / "data"
    try:
        done = run(NO_URL_EVERYWHERE, tmp_path, no_nats_env(tmp_path, data_dir))
        left = servers_serving(data_dir)
    finally:
        stop_server(data_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = [line for line in done.stdout.splitlines() if line.startswith("REFUSED")]
    assert [line.split()[1] for line in refused] == ["connect", "dagster", "fsspec", "spark"], (
        done.stdout + done.stderr[-3000:]
    )
    for line in refused:
        assert line.split()[2] == "NoServer", line
        assert str(data_dir) in line and "natsobj serve" in line and "NATS_URL" in line
    assert left == [], "a nats-server was started"
    assert not data_dir.exists(), "nothing was created for a server"


def test_only_embedded_starts_a_server_which_says_how_to_stop_it(tmp_path: Path):
    data_dir = tmp_path / "data"
    env = no_nats_env(tmp_path, data_dir)
    try:
        done = run(EMBEDDED_ASKED_THEN_NO_URL, tmp_path, env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "LISTED ['rule/a']" in done.stdout and "GOT b'1'" in done.stdout
        started = [line for line in done.stderr.splitlines() if "started the embedded" in line]
        assert len(started) == 1, done.stderr[-3000:]
        [warning] = started
        assert warning.startswith("WARNING natsobj")
        assert str(data_dir) in warning and "natsobj serve --stop" in warning
        live = running_server(data_dir)
        assert live is not None and f"pid {live.pid}" in warning and live.url in warning

        listed = natsobj_cli("serve", "--list", env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split() == [str(data_dir), live.url, "pid", str(live.pid)]
        stopped = natsobj_cli("serve", "--stop-all", env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the embedded server for {data_dir}" in stopped.stderr
        assert running_server(data_dir) is None and servers_serving(data_dir) == []
        assert natsobj_cli("serve", "--list", env=env).stdout == ""
    finally:
        stop_server(data_dir)


@pytest.mark.unit
def test_a_misspelt_option_is_refused_naming_the_known_ones(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(UnknownOption, match=r"'server' \(did you mean 'servers'\?\); known:.*url"):
        fsspec.filesystem("nats", server="nats://elsewhere:4222", skip_instance_cache=True)
    with pytest.raises(BadSparkOption, match=r"'urls' \(did you mean 'url'\?\); known:.*bucket"):
        SourceOptions.parse({"urls": "nats://elsewhere:4222", "bucket": "b", "path": "p"})
    with pytest.raises(ValueError, match=r"unknown field .*'server'.*known:.*url"):
        NatsObjectStoreResource(server="nats://elsewhere:4222")
    monkeypatch.setenv("NATSOBJ_DATADIR", "/elsewhere")
    with pytest.raises(UnknownOption, match=r"'NATSOBJ_DATADIR' \(did you mean 'NATSOBJ_DATA_DIR'"):
        ConnectionSettings.from_env()
    with pytest.raises(UnknownOption, match=r"unknown NATS URL option 'domian'.*known:.*domain"):
        ConnectionSettings.from_url("nats://h:4222?domian=hub")


def test_a_registry_others_can_write_is_refused_by_list(tmp_path: Path):
    """The registry names data directories to signal on --stop-all: one that other users can
    write is refused, as a data directory is; each entry is proven anyway."""
    env = no_nats_env(tmp_path, tmp_path / "data")
    registry = tmp_path / "state" / "natsobj" / "servers"
    registry.mkdir(parents=True)
    registry.chmod(0o777)
    listed = natsobj_cli("serve", "--list", env=env)
    assert listed.returncode == 5, listed.stdout + listed.stderr
    assert str(registry) in listed.stderr and "mode 777" in listed.stderr
    registry.chmod(0o700)
    (registry / "planted.json").write_text('{"data_dir": "/"}')
    (registry / "planted.json").chmod(0o600)
    listed = natsobj_cli("serve", "--list", env=env)
    assert listed.returncode == 0 and listed.stdout == "", listed.stderr
    assert not (registry / "planted.json").exists(), "an entry with no proven server is dropped"


SETTINGS_ONLY_PARSE = textwrap.dedent(
    """
    import sys
    from natsobj.settings import ConnectionSettings

    settings = ConnectionSettings.from_url("embedded")
    for name in sorted(dir(settings)):
        if name.startswith("_"):
            continue
        value = getattr(settings, name)
        if callable(value):
            try:
                value()
            except TypeError:
                pass  # takes arguments: not a way to reach a server
    print("LOADED", "natsobj.local.embedded" in sys.modules)
    """
)


@pytest.mark.unit
def test_settings_parse_and_start_no_server(tmp_path: Path):
    """``ConnectionSettings`` resolves names and values only: every public method of settings
    for the URL ``embedded`` runs without starting a server or loading the module that does
    (as found: ``resolved()`` started one; the connecting layer, natsobj.local.embedded_rule,
    does)."""
    data_dir = tmp_path / "data"
    try:
        done = run(SETTINGS_ONLY_PARSE, tmp_path, no_nats_env(tmp_path, data_dir))
        left = servers_serving(data_dir)
    finally:
        stop_server(data_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LOADED False" in done.stdout, done.stdout
    assert left == [], "a nats-server was started"
    assert not data_dir.exists(), "something was created for a server"
