"""Files a transfer writes below a local directory (issue 28, point 10).

``get -r``, ``sync`` and fsspec ``get`` make each file's place from an object's name below the
directory they fill. A symlink already there (``dest/cfg -> ~victim/.ssh``, planted by whoever
could write the destination) must not carry a file, nor a directory made for one, out of it;
the symlink is reported and the rest is written. These are the core's rule
(``ObjectStore.get_file(within=...)``, ``natsobj.local.files.open_target``); the faces' own
tests are in tests/cli/test_trust.py and tests/fsspec/test_fs.py.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from natsobj.errors import DigestMismatch, UnsafeLocalPath
from natsobj.local import files
from natsobj.local.files import open_target, replacing
from tests.raw import FORGED_DIGEST, rewrite_record

PRECIOUS = b"the user's own file, which no failed get may touch\n"


@pytest.fixture
def ssh(tmp_path: Path) -> Path:
    """The directory a planted symlink points at: a victim's ~/.ssh."""
    directory = tmp_path / "victim" / ".ssh"
    directory.mkdir(parents=True)
    (directory / "authorized_keys").write_bytes(b"the victim's key\n")
    return directory


def _untouched(ssh: Path) -> None:
    assert sorted(p.name for p in ssh.iterdir()) == ["authorized_keys"]
    assert (ssh / "authorized_keys").read_bytes() == b"the victim's key\n"


def test_get_file_within_refuses_a_symlink_that_leads_out(store, tmp_path: Path, ssh: Path) -> None:
    store.put("cfg/authorized_keys", b"the attacker's key\n")
    store.put("cfg/sub/deeper", b"a directory would be made through the link")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "cfg").symlink_to(ssh)

    for name in ("cfg/authorized_keys", "cfg/sub/deeper"):
        target = dest.joinpath(*name.split("/"))
        with pytest.raises(UnsafeLocalPath) as refused:
            store.get_file(name, target, within=dest)
        message = str(refused.value)
        assert store.bucket in message and repr(name) in message and str(target) in message
        assert str(ssh) in message  # where it leads

    _untouched(ssh)


def test_get_file_within_follows_a_symlink_that_stays_inside(store, tmp_path: Path) -> None:
    """The rule is where the file lands, not whether a symlink is on the way."""
    store.put("alias/f", b"inside")
    dest = tmp_path / "dest"
    (dest / "real").mkdir(parents=True)
    (dest / "alias").symlink_to(dest / "real")

    store.get_file("alias/f", dest / "alias" / "f", within=dest)

    assert (dest / "real" / "f").read_bytes() == b"inside"


def test_a_symlink_at_the_file_itself_is_replaced_not_followed(store, tmp_path: Path) -> None:
    outside = tmp_path / "etc-file"
    outside.write_bytes(b"system file")
    outside.chmod(0o640)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "file").symlink_to(outside)
    store.put("file", b"fetched")
    previous = os.umask(0o022)
    try:
        store.get_file("file", dest / "file", within=dest)
    finally:
        os.umask(previous)

    assert outside.read_bytes() == b"system file"
    assert not (dest / "file").is_symlink() and (dest / "file").read_bytes() == b"fetched"
    assert stat.S_IMODE((dest / "file").stat().st_mode) == 0o644  # not the link target's mode


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    tmp_path: Path, ssh: Path
) -> None:
    """The file is created and renamed relative to the directory that was proven inside: a
    symlink put in its place between the check and the write redirects nothing."""
    dest = tmp_path / "dest"
    (dest / "cfg").mkdir(parents=True)
    target = dest / "cfg" / "authorized_keys"
    with open_target(target, dest, bucket="b", name="cfg/authorized_keys") as place:
        (dest / "cfg").rename(dest / "moved")
        (dest / "cfg").symlink_to(ssh)
        with replacing(place) as handle:
            handle.write(b"the attacker's key\n")

    _untouched(ssh)
    assert (dest / "moved" / "authorized_keys").read_bytes() == b"the attacker's key\n"
    assert [p.name for p in (dest / "moved").iterdir()] == ["authorized_keys"]  # no .part left


def test_a_path_with_dot_dot_or_outside_the_directory_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    for path in (dest / "a" / ".." / ".." / "x", tmp_path / "elsewhere" / "x"):
        with (
            pytest.raises(UnsafeLocalPath, match=r"object 'n'"),
            open_target(path, dest, bucket="b", name="n"),
        ):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_proc_no_symlink_below_the_directory_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel cannot say where an open directory is (macOS has no /proc), even a
    symlink that stays inside is refused rather than trusted; plain directories still work."""
    monkeypatch.setattr(files, "_PROC_FD", tmp_path / "no-proc")
    dest = tmp_path / "dest"
    (dest / "real").mkdir(parents=True)
    (dest / "alias").symlink_to(dest / "real")

    with (
        pytest.raises(UnsafeLocalPath, match=r"alias is a symlink"),
        open_target(dest / "alias" / "f", dest, bucket="b", name="alias/f"),
    ):
        pass
    with open_target(dest / "real" / "new" / "f", dest) as place, replacing(place) as handle:
        handle.write(b"ok")

    assert (dest / "real" / "new" / "f").read_bytes() == b"ok"
    assert list((dest / "real").iterdir()) == [dest / "real" / "new"]


def test_get_file_replaces_the_target_only_with_a_verified_copy_keeping_its_mode(
    store, raw, tmp_path: Path
) -> None:
    """The rule every face writes a fetched file by (``localfiles.replacing``), on the core's
    ``get_file``: the CLI's ranged get (tests/cli/test_ranges_cli.py) and the Airflow
    download (tests/airflow/test_get_destination.py) are held to the same."""
    content = os.urandom(300_000)  # several chunks: the part is written before the check fails
    store.put("obj", content)
    target = tmp_path / "obj"
    target.write_bytes(PRECIOUS)
    target.chmod(0o640)
    kept = rewrite_record(raw, store.bucket, "obj", digest=FORGED_DIGEST)

    with pytest.raises(DigestMismatch):
        store.get_file("obj", target)
    assert target.read_bytes() == PRECIOUS
    assert [p.name for p in tmp_path.iterdir()] == ["obj"]  # no part left beside it

    rewrite_record(raw, store.bucket, "obj", digest=kept["digest"])
    store.get_file("obj", target)
    assert target.read_bytes() == content
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["obj"]
