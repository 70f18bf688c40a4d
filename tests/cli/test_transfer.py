"""put/get of files, directory trees and stdin/stdout, in-process and as the real executable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from cli_support import Invoke, cli_env

from natsobj.cli.exits import ExitCode
from natsobj.model import format_digest

MiB = 1024 * 1024


def test_put_and_get_a_file(invoke: Invoke, bucket_name: str, store, tmp_path: Path) -> None:
    source = tmp_path / "in.bin"
    source.write_bytes(os.urandom(700_000))
    put = invoke(
        "put", bucket_name, "models/in.bin", str(source),
        "-d", "weights", "-m", "run=42", "-H", "Content-Type: application/octet-stream",
        "--chunk-size", "100000",
    )  # fmt: skip
    assert put.exit_code == 0, put.stderr
    assert put.stdout.startswith(f"put {bucket_name}/models/in.bin")
    assert put.stderr == ""  # no progress bar when not on a terminal
    info = store.get_info("models/in.bin")
    assert (info.size, info.chunks, info.chunk_size) == (700_000, 7, 100_000)
    assert info.description == "weights" and info.metadata == {"run": "42"}
    assert info.headers == {"Content-Type": ["application/octet-stream"]}

    out_file = tmp_path / "out.bin"
    got = invoke("get", bucket_name, "models/in.bin", str(out_file))
    assert got.exit_code == 0, got.stderr
    assert out_file.read_bytes() == source.read_bytes()

    into_dir = tmp_path / "downloads"
    into_dir.mkdir()
    assert invoke("get", bucket_name, "models/in.bin", str(into_dir)).exit_code == 0
    assert (into_dir / "in.bin").read_bytes() == source.read_bytes()
    assert [p.name for p in into_dir.iterdir()] == ["in.bin"]  # no leftover temporaries


def test_directory_round_trip(invoke: Invoke, bucket_name: str, store, tmp_path: Path) -> None:
    tree = tmp_path / "run"
    files = {"a.txt": b"a", "sub/b.txt": b"bb", "sub/deeper/c.bin": os.urandom(300_000)}
    for relative, data in files.items():
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_bytes(data)

    not_recursive = invoke("put", bucket_name, "runs/1", str(tree))
    assert not_recursive.exit_code == ExitCode.USAGE
    assert "-r" in not_recursive.stderr

    put = invoke("put", bucket_name, "runs/1", str(tree), "-r")
    assert put.exit_code == 0, put.stderr
    assert sorted(i.name for i in store.list()) == sorted(f"runs/1/{r}" for r in files)

    back = tmp_path / "back"
    got = invoke("get", bucket_name, "runs/1/", str(back), "-r")
    assert got.exit_code == 0, got.stderr
    restored = {
        p.relative_to(back).as_posix(): p.read_bytes() for p in back.rglob("*") if p.is_file()
    }
    assert restored == files

    nothing = invoke("get", bucket_name, "runs/2", str(tmp_path / "none"), "-r")
    assert nothing.exit_code == ExitCode.NOT_FOUND


def test_get_r_refuses_names_escaping_the_directory(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path
) -> None:
    store.put("x/../../evil.txt", b"nope")
    result = invoke("get", bucket_name, "x", str(tmp_path / "dest"), "-r")
    assert result.exit_code == ExitCode.FAILED
    assert "x/../../evil.txt" in result.stderr
    assert not (tmp_path / "evil.txt").exists()


def test_stdin_stdout_in_process(invoke: Invoke, bucket_name: str, store) -> None:
    data = os.urandom(3 * MiB + 17)
    put = invoke("put", bucket_name, "stream.bin", "-", input=data)
    assert put.exit_code == 0, put.stderr
    assert store.get_info("stream.bin").digest == format_digest(hashlib.sha256(data).digest())
    got = invoke("get", bucket_name, "stream.bin", "-")
    assert got.exit_code == 0
    assert got.stdout_bytes == data
    assert got.stderr == ""


class PeakRss:
    """Follow a child's VmHWM (peak RSS of its own address space, reset by exec).

    ``wait4``'s ru_maxrss would also count the pytest process it was forked from.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.peak = 0
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        status = Path(f"/proc/{self.proc.pid}/status")
        while self.proc.poll() is None:
            with contextlib.suppress(OSError):
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
            time.sleep(0.01)

    def wait(self) -> int:
        self.proc.wait()
        self._thread.join()
        return self.peak


def test_large_random_file_piped_through_the_executable(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store
) -> None:
    size = 64 * MiB + 12345
    block = 1 * MiB
    base = [str(natsobj_bin), "--url", nats_url]
    sent = hashlib.sha256()

    put = subprocess.Popen(
        [*base, "put", bucket_name, "big.bin", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    put_rss = PeakRss(put)
    assert put.stdin is not None
    remaining = size
    while remaining:
        chunk = os.urandom(min(block, remaining))
        sent.update(chunk)
        put.stdin.write(chunk)
        remaining -= len(chunk)
    put.stdin.close()
    put_peak = put_rss.wait()
    put_out, put_err = put.stdout.read(), put.stderr.read()
    assert put.returncode == 0, put_err
    assert put_err == b""  # piped: no progress bar, no chatter
    assert b"big.bin" in put_out

    info = json.loads(
        subprocess.run([*base, "info", bucket_name, "big.bin", "--json"], capture_output=True,
                       env=cli_env(), check=True).stdout
    )  # fmt: skip
    assert info["size"] == size
    assert info["digest"] == format_digest(sent.digest())

    get = subprocess.Popen(
        [*base, "get", bucket_name, "big.bin", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    get_rss = PeakRss(get)
    received = hashlib.sha256()
    total = 0
    assert get.stdout is not None
    while chunk := get.stdout.read(block):
        received.update(chunk)
        total += len(chunk)
    get_peak = get_rss.wait()
    assert get.returncode == 0, get.stderr.read()
    assert get.stderr.read() == b""
    assert total == size
    assert received.digest() == sent.digest()

    # bounded memory: the interpreter alone takes ~35 MiB, holding the object would add 64
    for verb, peak in (("put", put_peak), ("get", get_peak)):
        assert 20 * MiB < peak < 80 * MiB, (
            f"{verb} peaked at {peak / MiB:.0f} MiB RSS; over 80 means it held the object"
        )


def test_reader_closing_the_pipe_early_ends_quietly(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store
) -> None:
    store.put("long.bin", os.urandom(4 * MiB))
    get = subprocess.Popen(
        [str(natsobj_bin), "--url", nats_url, "get", bucket_name, "long.bin", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    assert get.stdout is not None and get.stderr is not None
    assert len(get.stdout.read(10)) == 10  # like `| head -c 10`
    get.stdout.close()
    err = get.stderr.read()
    assert get.wait(timeout=30) == 1
    assert err == b""
