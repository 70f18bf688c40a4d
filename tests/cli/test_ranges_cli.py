"""``natsobj get --range`` and ``natsobj cat [--range]``: HTTP-style byte ranges (END
included, ``START-``, ``-SUFFIX``) on a real server, to files and to stdout."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cli_support import Invoke

from natsobj.cli.exits import ExitCode
from tests.raw import rewrite_record

DATA = os.urandom(300_001)


@pytest.fixture
def chunked(store) -> bytes:
    store.put("data.bin", DATA, chunk_size=1000)
    return DATA


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("0-0", DATA[:1]),
        ("100-199", DATA[100:200]),
        ("bytes=1000-2999", DATA[1000:3000]),
        ("299990-", DATA[299_990:]),
        ("-10", DATA[-10:]),
        ("-999999", DATA),  # a suffix longer than the object is all of it, as HTTP says
        ("300000-400000", DATA[300_000:]),  # an end past the object is clamped
    ],
    ids=lambda value: value if isinstance(value, str) else "",  # DATA is random: ids by spec
)
def test_cat_range_writes_those_bytes(
    invoke: Invoke, bucket_name: str, chunked: bytes, spec: str, expected: bytes
) -> None:
    result = invoke("cat", bucket_name, "data.bin", "--range", spec)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected


def test_cat_without_a_range_is_the_whole_verified_object(
    invoke: Invoke, bucket_name: str, chunked: bytes
) -> None:
    result = invoke("cat", bucket_name, "data.bin")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == chunked


def test_get_range_to_a_file_and_to_stdout(
    invoke: Invoke, bucket_name: str, chunked: bytes, tmp_path: Path
) -> None:
    target = tmp_path / "part.bin"
    result = invoke("get", bucket_name, "data.bin", str(target), "--range", "5000-5999")
    assert result.exit_code == 0, result.stderr
    assert target.read_bytes() == chunked[5000:6000]
    assert f"got {bucket_name}/data.bin  bytes 5000-5999/300001" in result.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["part.bin"]  # no leftover .part

    piped = invoke("get", bucket_name, "data.bin", "-", "--range", "-4")
    assert piped.exit_code == 0, piped.stderr
    assert piped.stdout_bytes == chunked[-4:]


def test_get_range_replaces_a_file_only_once_every_byte_arrived_keeping_its_mode(
    invoke: Invoke, bucket_name: str, chunked: bytes, raw, tmp_path: Path
) -> None:
    """The core's rule for a fetched file (``localfiles.replacing``, tested on ``get_file`` in
    tests/security/test_local_files.py), on ``get --range``: a read that fails (a record
    claiming a byte more than its chunks hold) leaves the user's file and no part."""
    target = tmp_path / "part.bin"
    target.write_bytes(b"the user's own file")
    target.chmod(0o640)
    kept = rewrite_record(raw, bucket_name, "data.bin", size=len(chunked) + 1)

    failed = invoke("get", bucket_name, "data.bin", str(target), "--range", "0-")
    assert failed.exit_code != 0
    assert "its chunks hold 300001 bytes, the record says 300002" in failed.stderr
    assert target.read_bytes() == b"the user's own file"
    assert [p.name for p in tmp_path.iterdir()] == ["part.bin"]

    rewrite_record(raw, bucket_name, "data.bin", size=kept["size"])
    result = invoke("get", bucket_name, "data.bin", str(target), "--range", "100-")
    assert result.exit_code == 0, result.stderr
    assert target.read_bytes() == chunked[100:]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["part.bin"]


@pytest.mark.parametrize("spec", ["10", "a-b", "5-2", "-0", "-", "1-2-3"])
def test_a_malformed_range_is_a_usage_error(
    invoke: Invoke, bucket_name: str, chunked: bytes, spec: str
) -> None:
    result = invoke("cat", bucket_name, "data.bin", "--range", spec)
    assert result.exit_code == ExitCode.USAGE
    assert "--range" in result.stderr
    assert result.stdout_bytes == b""


def test_a_start_past_the_end_is_not_satisfiable(
    invoke: Invoke, bucket_name: str, chunked: bytes, tmp_path: Path
) -> None:
    result = invoke("get", bucket_name, "data.bin", str(tmp_path / "x"), "--range", "300001-")
    assert result.exit_code == ExitCode.USAGE
    assert "not satisfiable" in result.stderr and "300001 bytes" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_range_with_recursive_is_refused(
    invoke: Invoke, bucket_name: str, chunked: bytes, tmp_path
):
    result = invoke("get", bucket_name, "data.bin", str(tmp_path), "-r", "--range", "0-9")
    assert result.exit_code == ExitCode.USAGE
    assert "-r" in result.stderr


def test_the_installed_executable_pipes_a_range(run_bin, bucket_name: str, chunked: bytes) -> None:
    done = run_bin("cat", bucket_name, "data.bin", "--range", "123456-124455")
    assert done.returncode == 0, done.stderr
    assert done.stdout == chunked[123_456:124_456]
