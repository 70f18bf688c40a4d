"""The progress bar appears on a terminal and never when output is piped or captured."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from pathlib import Path

from cli_support import cli_env

SIZE = 32 * 1024 * 1024  # 33.6 MB: long enough for several refreshes of the bar


def _run_with_tty_stderr(args: list[str]) -> tuple[int, bytes, bytes]:
    """Run with stderr on a pseudo-terminal (as in an interactive shell), stdout piped."""
    master, slave = pty.openpty()
    captured = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once the child closed its end
                return
            if not data:
                return
            captured.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
            env=cli_env(TERM="xterm-256color", COLUMNS="120"), timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, proc.stdout, bytes(captured)


def test_progress_bar_only_on_a_terminal(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store, tmp_path: Path
) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(SIZE))
    base = [str(natsobj_bin), "--url", nats_url]

    code, out, terminal = _run_with_tty_stderr([*base, "put", bucket_name, "big.bin", str(source)])
    assert code == 0, terminal
    assert b"big.bin" in out
    assert b"33.6/33.6 MB" in terminal  # rich's DownloadColumn: done/total
    assert b"MB/s" in terminal  # TransferSpeedColumn

    code, out, terminal = _run_with_tty_stderr([*base, "get", bucket_name, "big.bin", "-"])
    assert code == 0
    assert out == source.read_bytes()  # the bar never leaks into the data stream
    assert b"33.6/33.6 MB" in terminal and b"MB/s" in terminal

    code, out, terminal = _run_with_tty_stderr(
        [*base, "get", bucket_name, "big.bin", str(tmp_path / "copy.bin"), "--no-progress"]
    )
    assert code == 0
    assert terminal == b""

    piped = subprocess.run(
        [*base, "get", bucket_name, "big.bin", str(tmp_path / "again.bin")],
        capture_output=True, env=cli_env(FORCE_COLOR="1"), timeout=60, check=False,
    )  # fmt: skip
    assert piped.returncode == 0
    assert piped.stderr == b""  # FORCE_COLOR does not turn a pipe into a terminal
