"""Issue 21 at the command line: object names written by someone else (colliding, unmappable,
full of control characters), ``rm -r`` from the top of a bucket, and the files ``get`` leaves
behind (their mode, and no ``.part`` after SIGTERM)."""

from __future__ import annotations

import os
import pty
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Invoke, cli_env, publish_raw

from natsobj.cli.exits import ExitCode
from natsobj.cli.render import shell_escape

MiB = 1024 * 1024


@pytest.fixture
def umask_027() -> Iterator[int]:
    previous = os.umask(0o027)
    yield 0o027
    os.umask(previous)


def _names(store) -> set[str]:
    return {i.name for i in store.list()}


# -- point 13: names that share a local path, or have none --------------------------------------


def test_get_r_reports_colliding_and_unmappable_names_and_fetches_the_rest(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path
) -> None:
    for name, data in {
        "r/x": b"one", "r/./x": b"two", "r/x/": b"three",  # all 'x' on disk
        "r/d": b"file", "r/d/e": b"below",  # 'd' would be a file and a directory
        "r/.": b"dot", "r/../up": b"escape", "r/nul\x00name": b"nul",  # no local path at all
        "r/ok.txt": b"fine", "r/sub//deep.txt": b"deep",
    }.items():  # fmt: skip
        store.put(name, data)
    dest = tmp_path / "dest"

    result = invoke("get", bucket_name, "r", str(dest), "-r")

    assert result.exit_code == ExitCode.FAILED
    collision = next(line for line in result.stderr.splitlines() if "'r/./x'" in line)
    assert "'r/x'" in collision and "'r/x/'" in collision and bucket_name in collision
    assert any("'r/d'" in line and "'r/d/e'" in line for line in result.stderr.splitlines())
    for bad in ("'r/.'", "'r/../up'", "'r/nul\\x00name'"):
        assert bad in result.stderr, bad
    assert not (dest / "x").exists() and not (dest / "d").is_file()
    assert not (tmp_path / "up").exists()
    files = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert files == {"ok.txt": b"fine", "sub/deep.txt": b"deep", "d/e": b"below"}


def test_sync_delete_compares_normalized_paths_so_a_second_run_changes_nothing(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path
) -> None:
    store.put("data//f.txt", b"F")
    store.put("data/g.txt", b"G")
    dest = tmp_path / "mirror"
    source = f"nats://{bucket_name}/data"

    first = invoke("sync", source, str(dest), "--delete")
    assert first.exit_code == 0, first.stderr
    for _ in range(2):  # today the second run deletes f.txt and the third fetches it again
        again = invoke("sync", source, str(dest), "--delete")
        assert again.exit_code == 0, again.stderr
        assert again.stdout == ""
        assert (dest / "f.txt").read_bytes() == b"F" and (dest / "g.txt").read_bytes() == b"G"


def test_sync_down_reports_collisions_and_keeps_their_local_file(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path
) -> None:
    store.put("data/x", b"one")
    store.put("data/./x", b"two")
    store.put("data/y", b"why")
    dest = tmp_path / "mirror"
    dest.mkdir()
    (dest / "x").write_bytes(b"mine")

    result = invoke("sync", f"nats://{bucket_name}/data", str(dest), "--delete")

    assert result.exit_code == ExitCode.FAILED
    assert "'data/x'" in result.stderr and "'data/./x'" in result.stderr
    assert (dest / "x").read_bytes() == b"mine"  # neither overwritten nor deleted
    assert (dest / "y").read_bytes() == b"why"


# -- issue 28 point 10: a symlink already in the destination --------------------------------------


@pytest.mark.parametrize("command", ["get -r", "sync"])
def test_a_planted_symlink_carries_nothing_out_of_the_destination(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path, command: str
) -> None:
    """``dest/cfg -> ~victim/.ssh``: the objects below ``cfg`` are refused and reported (the
    object and the local path), the rest is fetched, and the exit is non-zero. A symlink at a
    file's own name is replaced by the file, its target untouched."""
    ssh = tmp_path / "victim" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "authorized_keys").write_bytes(b"the victim's key\n")
    system_file = tmp_path / "etc-file"
    system_file.write_bytes(b"system")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "cfg").symlink_to(ssh)
    (dest / "link.txt").symlink_to(system_file)
    for name, data in {
        "r/cfg/authorized_keys": b"the attacker's key\n",
        "r/cfg/sub/deeper": b"a directory made through the link",
        "r/ok.txt": b"fine",
        "r/link.txt": b"replaced",
    }.items():
        store.put(name, data)

    if command == "sync":
        result = invoke("sync", f"nats://{bucket_name}/r", str(dest))
    else:
        result = invoke("get", bucket_name, "r", str(dest), "-r")

    assert result.exit_code == ExitCode.FAILED, result.stdout + result.stderr
    assert sorted(p.name for p in ssh.iterdir()) == ["authorized_keys"]
    assert (ssh / "authorized_keys").read_bytes() == b"the victim's key\n"
    assert system_file.read_bytes() == b"system"
    for name, local in (
        ("r/cfg/authorized_keys", dest / "cfg" / "authorized_keys"),
        ("r/cfg/sub/deeper", dest / "cfg" / "sub" / "deeper"),
    ):
        refusal = [line for line in result.stderr.splitlines() if repr(name) in line]
        assert len(refusal) == 1 and str(local) in refusal[0] and bucket_name in refusal[0], (
            result.stderr
        )
    assert (dest / "ok.txt").read_bytes() == b"fine"
    assert not (dest / "link.txt").is_symlink() and (dest / "link.txt").read_bytes() == b"replaced"


@pytest.mark.parametrize("command", ["get", "sync"])
def test_an_object_that_does_not_verify_costs_only_itself(
    invoke: Invoke, bucket_name: str, store, nats_url: str, tmp_path: Path, command: str
) -> None:
    """Issue 28: one object whose bytes do not verify (a writer added a chunk after its record)
    is reported, naming it, and the transfer goes on with the rest, exiting non-zero; the
    first such object used to end ``get -r`` and ``sync`` there, the later objects never
    fetched."""
    bad = store.put("r/a-bad.bin", b"b" * 1000)
    store.put("r/b-ok.txt", b"fine")
    store.put("r/c-ok.txt", b"also fine")
    publish_raw(nats_url, f"$O.{bucket_name}.C.{bad.nuid}", b"appended by another writer")
    dest = tmp_path / "dest"
    dest.mkdir()

    if command == "sync":
        result = invoke("sync", f"nats://{bucket_name}/r", str(dest))
    else:
        result = invoke("get", bucket_name, "r", str(dest), "-r")

    assert result.exit_code == ExitCode.DIGEST_MISMATCH, result.stdout + result.stderr
    reported = [line for line in result.stderr.splitlines() if "'r/a-bad.bin'" in line]
    assert len(reported) == 1 and bucket_name in reported[0], result.stderr
    assert (dest / "b-ok.txt").read_bytes() == b"fine"
    assert (dest / "c-ok.txt").read_bytes() == b"also fine"
    assert sorted(p.name for p in dest.iterdir()) == ["b-ok.txt", "c-ok.txt"]


# -- point 14: rm -r from the top of a bucket ----------------------------------------------------


@pytest.mark.parametrize("top", ["/", ".", ""])
def test_rm_r_from_the_top_needs_yes_without_a_terminal(
    invoke: Invoke, bucket_name: str, store, top: str
) -> None:
    for name in ("a", "b/c", "d/e/f"):
        store.put(name, b"x")

    refused = invoke("rm", "-r", bucket_name, top)
    assert refused.exit_code == ExitCode.USAGE
    assert "--yes" in refused.stderr and "3 objects" in refused.stderr
    assert _names(store) == {"a", "b/c", "d/e/f"}

    assert invoke("rm", "-r", bucket_name, "b").exit_code == 0  # a real prefix needs no --yes
    done = invoke("rm", "-r", "--yes", bucket_name, top)
    assert done.exit_code == 0, done.stderr
    assert _names(store) == set()


def _rm_on_a_terminal(natsobj_bin: Path, nats_url: str, bucket: str, answer: bytes) -> str:
    """``natsobj rm -r BUCKET /`` with stdin a pseudo-terminal that types ``answer``."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(natsobj_bin), "--url", nats_url, "rm", "-r", bucket, "/"],
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
        )  # fmt: skip
        os.write(controller, answer)
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(controller)
        os.close(terminal)
    return out.decode() + err.decode()


def test_rm_r_from_the_top_asks_on_a_terminal(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store
) -> None:
    for name in ("a", "b/c"):
        store.put(name, b"x")

    declined = _rm_on_a_terminal(natsobj_bin, nats_url, bucket_name, b"n\n")
    assert f"Delete all 2 objects in bucket {bucket_name}? [y/N]" in declined
    assert _names(store) == {"a", "b/c"}

    _rm_on_a_terminal(natsobj_bin, nats_url, bucket_name, b"y\n")
    assert _names(store) == set()


# -- point 16: control characters, file modes, SIGTERM --------------------------------------------


def test_ls_and_watch_escape_control_characters(invoke: Invoke, bucket_name: str, store) -> None:
    evil = "evil\n\x1b[2Jfake\tname"
    store.put(evil, b"x")
    store.put("dir\x1b]0;title\x07/inner", b"y")
    store.put("a[red]b", b"z")  # rich markup must not eat it either
    escaped = "'evil'$'\\n\\033''[2Jfake'$'\\t''name'"

    listing = invoke("ls", bucket_name)
    watched = invoke("watch", bucket_name, "--history", "--count", "3")
    info = invoke("info", bucket_name, evil)

    for result in (listing, watched, info):
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
        assert "\t" not in result.stdout
        assert escaped in result.stdout
    assert "'dir'$'\\033'']0;title'$'\\a''/'" in listing.stdout
    assert "'a[red]b'" in listing.stdout
    assert len(listing.stdout.splitlines()) == 2 + 3  # header, rule, one line per entry


def test_info_and_status_escape_what_other_clients_wrote_in_records(
    invoke: Invoke, bucket_name: str, sync_client
) -> None:
    """Descriptions, headers and metadata are free text from whoever wrote the record: shown
    as escapes, never acted on by the terminal."""
    hostile = "ok\x1b]0;owned\x07\nfake line\x1b[2J"
    store = sync_client.create_store(bucket_name, description=hostile, metadata={"k": hostile})
    try:
        store.put(
            "plain", b"x", description=hostile, metadata={hostile: hostile}, headers={"X": "a\x1bb"}
        )
        info = invoke("info", bucket_name, "plain")
        status = invoke("store", "status", bucket_name)
        for result in (info, status):
            assert result.exit_code == 0, result.stderr
            assert "\x1b" not in result.stdout and "\x07" not in result.stdout
            assert "fake line" in result.stdout and "\nfake line" not in result.stdout
            assert "ok\\033]0;owned\\a\\nfake line\\033[2J" in result.stdout
        assert "a\\033b" in info.stdout
    finally:
        sync_client.delete_store(bucket_name)


@pytest.mark.parametrize(
    "name",
    ["plain.txt", "a\nb", "\nb", "x\x1by", "it's", "it's~", "a'b$c", "\n'x", "sp ace", "#h",
     "a#", "~a", "x~y", "{", "a{b", "a\\b", "a\x7f", "\x85x", "é", "a\x01\x021", "\a\b\f\v\r"],
)  # fmt: skip
def test_shell_escape_matches_coreutils_ls(tmp_path: Path, name: str) -> None:
    (tmp_path / name).touch()
    shown = subprocess.run(
        ["ls", "--quoting-style=shell-escape", "-d", "--", name],
        cwd=tmp_path, capture_output=True, check=True, env={"LC_ALL": "C.UTF-8"},
    ).stdout  # fmt: skip
    assert shell_escape(name) == shown.decode().removesuffix("\n")


def test_get_honours_the_umask_and_keeps_an_existing_files_mode(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path, umask_027: int
) -> None:
    store.put("f.txt", b"new")
    fresh = tmp_path / "fresh.txt"
    assert invoke("get", bucket_name, "f.txt", str(fresh)).exit_code == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask_027

    for before, after in ((0o604, 0o604), (0o4755, 0o755)):  # never a setuid file of new bytes
        existing = tmp_path / f"existing-{before:o}.txt"
        existing.write_bytes(b"old")
        existing.chmod(before)
        assert invoke("get", bucket_name, "f.txt", str(existing)).exit_code == 0
        assert existing.read_bytes() == b"new"
        assert stat.S_IMODE(existing.stat().st_mode) == after

    tree = tmp_path / "tree"
    store.put("t/a", b"a")
    assert invoke("get", bucket_name, "t", str(tree), "-r").exit_code == 0
    assert stat.S_IMODE((tree / "a").stat().st_mode) == 0o640


def _wait_for_part(directory: Path, timeout: float = 30) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        parts = [p for p in directory.glob(".*.part") if p.stat().st_size > 0]
        if parts:
            return parts[0]
        time.sleep(0.002)
    raise AssertionError(f"no .part file with data appeared in {directory}")


@pytest.mark.parametrize(
    ("signum", "returncode"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 1)]
)
def test_a_signal_during_get_removes_the_part_file(
    natsobj_bin: Path, nats_url: str, bucket_name: str, store, tmp_path: Path,
    signum: int, returncode: int,
) -> None:  # fmt: skip
    store.put("big.bin", os.urandom(24 * MiB))
    target = tmp_path / "big.bin"
    proc = subprocess.Popen(
        [str(natsobj_bin), "--url", nats_url, "get", bucket_name, "big.bin", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    try:
        _wait_for_part(tmp_path)
        proc.send_signal(signal.SIGSTOP)  # hold it mid-transfer: the signal lands there
        proc.send_signal(signum)
        proc.send_signal(signal.SIGCONT)
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == returncode, proc.stderr.read() if proc.stderr else ""
    assert list(tmp_path.iterdir()) == []  # neither the .part nor a partial target


def test_progress_bar_escapes_the_name(
    invoke: Invoke, bucket_name: str, store, tmp_path: Path
) -> None:
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(1000))
    name = "x\x1b]0;pwned\x07[bold]y"
    put = invoke("put", bucket_name, name, str(source), "--progress")
    assert put.exit_code == 0, put.stderr
    assert "\x1b]0;pwned" not in put.stderr and "\x07" not in put.stderr
    assert "'x'$'\\033'']0;pwned'$'\\a''[bold]y'" in put.stdout + put.stderr
