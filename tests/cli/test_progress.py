"""The progress bar appears on a terminal and never when output is piped or captured."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from pathlib import Path

from cli_support import cli_env

SIZE = 32 * 1024 * 1024  # long enough for several refreshes of the bar


def _run_on_a_terminal(args: list[str], *, stdout_too: bool) -> tuple[int, bytes, bytes]:
    """Run with stderr on a pseudo-terminal, as in an interactive shell, and stdout piped or,
    with ``stdout_too``, on the same terminal. Returns the exit code, what went through the
    pipe and what the terminal showed."""
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
            args, stdout=slave if stdout_too else subprocess.PIPE, stderr=slave,
            stdin=subprocess.DEVNULL, env=cli_env(TERM="xterm-256color", COLUMNS="120"),
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, proc.stdout or b"", bytes(captured)


def test_progress_bar_only_on_a_terminal(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store, tmp_path: Path
) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(SIZE))
    base = [str(natsobj_bin), "--url", nats_url]

    code, out, terminal = _run_on_a_terminal(
        [*base, "put", bucket_name, "big.bin", str(source)], stdout_too=False
    )
    assert code == 0, terminal
    assert b"big.bin" in out
    assert b"32.0/32.0 MiB" in terminal  # done/total, in binary units as sizes are counted
    assert b"MiB/s" in terminal  # the rate, in the same units

    code, out, terminal = _run_on_a_terminal(
        [*base, "get", bucket_name, "big.bin", "-"], stdout_too=False
    )
    assert code == 0
    assert out == source.read_bytes()  # the bar never leaks into the data stream
    assert b"32.0/32.0 MiB" in terminal and b"MiB/s" in terminal

    code, out, terminal = _run_on_a_terminal(
        [*base, "get", bucket_name, "big.bin", str(tmp_path / "copy.bin"), "--no-progress"],
        stdout_too=False,
    )
    assert code == 0
    assert terminal == b""

    piped = subprocess.run(
        [*base, "get", bucket_name, "big.bin", str(tmp_path / "again.bin")],
        capture_output=True, env=cli_env(FORCE_COLOR="1"), timeout=60, check=False,
    )  # fmt: skip
    assert piped.returncode == 0
    assert piped.stderr == b""  # FORCE_COLOR does not turn a pipe into a terminal


def test_the_summary_line_is_not_glued_to_the_finished_bar(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store, tmp_path: Path
) -> None:
    """On one terminal the summary starts a line of its own: the bar's line is cleared before
    it (rich's erase-line) or ended, never continued by it."""
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(SIZE))
    base = [str(natsobj_bin), "--url", nats_url]
    for args in (
        ["put", bucket_name, "big.bin", str(source)],
        ["get", bucket_name, "big.bin", str(tmp_path / "copy.bin")],
    ):
        code, _, screen = _run_on_a_terminal([*base, *args], stdout_too=True)
        assert code == 0, screen
        verb = b"put " if args[0] == "put" else b"got "
        at = screen.index(verb + bucket_name.encode() + b"/big.bin")
        before = screen[:at]
        assert b"/s" in before  # the bar was drawn first
        assert before.endswith((b"\x1b[2K", b"\n", b"\r")), before[-80:]
        # and the bar, drawn again below it, is cleared at the end: the line stays alone
        line = screen[at:].split(b"\n", 1)[0]
        assert b"/s " not in line, line
