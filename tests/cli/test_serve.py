"""``natsobj serve`` in the foreground, found by other commands without any setting."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from cli_support import cli_env

from natsobj.cli.exits import ExitCode
from natsobj.local.embedded import ensure_server, free_port, running_server


def test_serve_is_the_default_server_here_and_stops_on_ctrl_c(
    natsobj_bin: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".natsobj"
    env = cli_env()
    env.pop("NATSOBJ_DATA_DIR", None)
    server = subprocess.Popen(
        [str(natsobj_bin), "serve"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip()
        live = running_server(data_dir)
        assert live is not None and url == live.url

        def natsobj(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(natsobj_bin), *args], cwd=cwd, env=env, capture_output=True, text=True,
                timeout=60, check=False,
            )  # fmt: skip

        assert natsobj("store", "create", "artifacts").returncode == 0
        put = subprocess.run(
            [str(natsobj_bin), "put", "artifacts", "hello.txt", "-"], cwd=tmp_path, env=env,
            input=b"hello", capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert put.returncode == 0, put.stderr
        assert "hello.txt" in natsobj("ls", "artifacts").stdout

        second = natsobj("serve")
        assert second.returncode == ExitCode.FAILED
        assert "already running" in second.stderr

        elsewhere = natsobj("stores", cwd=tmp_path.parent)  # no server registered there
        assert elsewhere.returncode == ExitCode.CONNECTION

        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert "Traceback" not in err.decode()
    assert running_server(data_dir) is None


def test_serve_listens_on_the_port_asked_for(natsobj_bin: Path, tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [str(natsobj_bin), "serve", "--data-dir", str(tmp_path / "d"), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    try:
        assert server.stdout is not None
        assert server.stdout.readline().decode().strip() == f"nats://127.0.0.1:{port}"
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    finally:
        server.kill()
        server.wait()
    assert server.returncode == 0
    assert running_server(tmp_path / "d") is None


def test_serve_stop_stops_the_background_server_of_a_pipeline(
    natsobj_bin: Path, tmp_path: Path
) -> None:
    """An 'embedded' URL starts a detached server that outlives the pipeline; ``serve --stop``
    is how a user (and ``make clean``) ends it."""
    data_dir = tmp_path / "data"
    started = ensure_server(data_dir)
    env = cli_env()

    def stop() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(natsobj_bin), "serve", "--stop", "--data-dir", str(data_dir)],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    first = stop()
    assert first.returncode == 0, first.stderr
    assert f"pid {started.pid}" in first.stderr and started.url in first.stderr
    assert running_server(data_dir) is None
    again = stop()
    assert again.returncode == 0 and "no embedded server is running" in again.stderr
