"""``natsobj serve --gateway``: a local S3 endpoint in one command, as a newcomer runs it, with
the AWS CLI pointed at it by the lines ``natsobj gateway --print-env`` prints; the key it
generates is local state like the server's nkey (0600, refused when unsafe), and a separate
``natsobj gateway`` in front of the embedded server finds it without ``--credentials``."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from natsobj.cli.exits import ExitCode
from natsobj.local.embedded import GATEWAY_KEYS_FILE, free_port, running_server


def environment(cwd: Path) -> dict[str, str]:
    """The test's environment for a user in ``cwd``: no NATS_* or gateway settings, the
    embedded server of ``cwd/.natsobj``, this checkout on the path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NATS_", "AWS_", "NATSOBJ_GATEWAY_", "NATSOBJ_DATA_DIR"))
    }
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["HOME"] = str(cwd)
    return env


def natsobj(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "natsobj.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def exported(lines: str) -> dict[str, str]:
    """The variables of ``export NAME=VALUE`` lines, as a shell's eval would set them."""
    values = {}
    for line in lines.splitlines():
        words = shlex.split(line)
        assert words[0] == "export", line
        for word in words[1:]:
            name, _, value = word.partition("=")
            values[name] = value
    return values


def aws(env: dict[str, str], *args: str) -> str:
    executable = shutil.which("aws", path=str(Path(sys.executable).parent))
    assert executable is not None, "the AWS CLI (aws, in the dev extra) is not installed"
    done = subprocess.run(
        [executable, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"aws {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_serve_gateway_is_an_s3_endpoint_for_the_aws_cli(tmp_path: Path) -> None:
    env = environment(tmp_path)
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "natsobj.cli", "serve", "--gateway", f"127.0.0.1:{port}"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    data_dir = tmp_path / ".natsobj"
    gateway = None
    try:
        assert serve.stdout is not None and serve.stderr is not None
        assert serve.stdout.readline().startswith("nats://127.0.0.1:")
        assert serve.stdout.readline().strip() == f"S3 gateway on http://127.0.0.1:{port}"
        keys = data_dir / GATEWAY_KEYS_FILE
        assert keys.stat().st_mode & 0o777 == 0o600
        said = ""
        while "--print-env" not in said:
            line = serve.stderr.readline()
            assert line, f"serve --gateway exited: {said}"
            said += line
        hint = f'eval "$(natsobj gateway --print-env --listen 127.0.0.1:{port})"'
        assert hint in said and str(keys) in said
        printed = natsobj(tmp_path, env, "gateway", "--print-env", "--listen", f"127.0.0.1:{port}")
        assert printed.returncode == 0, printed.stderr
        variables = exported(printed.stdout)
        secret = variables["AWS_SECRET_ACCESS_KEY"]
        assert secret in keys.read_text() and secret not in said  # printed only when asked
        assert variables["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{port}"

        client = {**env, **variables, "AWS_CONFIG_FILE": str(tmp_path / "no-config")}
        aws(client, "s3", "mb", "s3://data")
        (tmp_path / "hello.txt").write_bytes(b"hello through serve --gateway")
        aws(client, "s3", "cp", str(tmp_path / "hello.txt"), "s3://data/greetings/hello.txt")
        assert "greetings/hello.txt" in aws(client, "s3", "ls", "--recursive", "s3://data")
        presigned = natsobj(tmp_path, client, "presign", "s3://data/greetings/hello.txt")
        assert presigned.returncode == 0, presigned.stderr
        with urllib.request.urlopen(presigned.stdout.strip(), timeout=30) as answer:
            assert answer.read() == b"hello through serve --gateway"

        # a second gateway in front of the same embedded server: the same key, no file given
        other = free_port()
        gateway = subprocess.Popen(
            [sys.executable, "-m", "natsobj.cli", "gateway", "--listen", f"127.0.0.1:{other}"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert gateway.stdout is not None
        assert gateway.stdout.readline().strip() == f"S3 gateway on http://127.0.0.1:{other}"
        there = {**client, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{other}"}
        assert "greetings/hello.txt" in aws(there, "s3", "ls", "--recursive", "s3://data")
        gateway.send_signal(signal.SIGTERM)
        assert gateway.wait(timeout=30) == 0

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0, serve.stderr.read()
    finally:
        for process in (gateway, serve):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    assert running_server(data_dir) is None


def test_the_generated_key_file_is_refused_when_others_can_read_it(tmp_path: Path) -> None:
    env = environment(tmp_path)
    first = natsobj(tmp_path, env, "gateway", "--print-env")
    assert first.returncode == 0, first.stderr
    keys = tmp_path / ".natsobj" / GATEWAY_KEYS_FILE
    assert natsobj(tmp_path, env, "gateway", "--print-env").stdout == first.stdout  # kept
    keys.chmod(0o644)
    refused = natsobj(tmp_path, env, "gateway", "--print-env")
    assert refused.returncode == ExitCode.CONNECTION, refused.stderr
    assert f"{keys} has mode 644" in refused.stderr
    assert "AWS_SECRET_ACCESS_KEY" not in refused.stdout
    # serve --gateway checks the key before it starts a server that would then be left behind
    served = natsobj(tmp_path, env, "serve", "--gateway", f"127.0.0.1:{free_port()}")
    assert served.returncode == ExitCode.CONNECTION and "has mode 644" in served.stderr
    assert running_server(tmp_path / ".natsobj") is None


def test_gateway_without_credentials_needs_the_embedded_server(tmp_path: Path) -> None:
    env = environment(tmp_path)
    done = natsobj(tmp_path, env, "--url", "nats://127.0.0.1:4222", "gateway")
    assert done.returncode == ExitCode.USAGE
    assert "--credentials FILE is required" in done.stderr


def test_serve_gateway_ends_when_its_server_is_stopped(tmp_path: Path) -> None:
    """The gateway does not outlive the embedded server it fronts: ``serve --stop`` from
    elsewhere ends ``serve --gateway``, which says the server exited and frees the port."""
    env = environment(tmp_path)
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "natsobj.cli", "serve", "--gateway", f"127.0.0.1:{port}"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        serve.stdout.readline()
        assert serve.stdout.readline().strip() == f"S3 gateway on http://127.0.0.1:{port}"
        assert natsobj(tmp_path, env, "serve", "--stop").returncode == 0
        _, err = serve.communicate(timeout=30)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert serve.returncode == ExitCode.CONNECTION, err
    assert "exited unexpectedly" in err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # the gateway let go of its port


def test_print_env_names_one_key_of_several(tmp_path: Path) -> None:
    """A credentials file of several keys: ``--print-env`` asks which, and ``--access-key``
    (which had no option to give it) picks it; it goes only with ``--print-env``."""
    env = environment(tmp_path)
    keys = tmp_path / "keys.toml"
    keys.write_text(
        '[keys.AKIAONE]\nsecret = "one-secret"\n[keys.AKIATWO]\nsecret = "two-secret"\n'
    )
    keys.chmod(0o600)
    url = ["--url", "nats://127.0.0.1:4222"]
    ask = natsobj(tmp_path, env, *url, "gateway", "--credentials", str(keys), "--print-env")
    assert ask.returncode != 0 and "name one" in ask.stderr
    printed = natsobj(
        tmp_path, env, *url, "gateway", "--credentials", str(keys), "--print-env",
        "--access-key", "AKIATWO",
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    values = exported(printed.stdout)
    assert values["AWS_ACCESS_KEY_ID"] == "AKIATWO"
    assert values["AWS_SECRET_ACCESS_KEY"] == "two-secret"
    alone = natsobj(
        tmp_path, env, *url, "gateway", "--credentials", str(keys), "--access-key", "AKIAONE"
    )
    assert alone.returncode == ExitCode.USAGE and "--print-env" in alone.stderr
