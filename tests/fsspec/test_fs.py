"""The nats:// fsspec filesystem against a real server: directories from prefixes, streamed
reads with seeks, streamed writes that leave no object when abandoned, and pandas round trips."""

from __future__ import annotations

import asyncio
import json
import threading
import traceback

import fsspec
import pandas as pd
import pytest

from natsobj.errors import BucketNotFound, UnsafeLocalPath
from natsobj.fs import NatsObjectFileSystem
from natsobj.names import meta_subject


@pytest.fixture
def fs(nats_url: str, store) -> NatsObjectFileSystem:
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def test_entry_point_registers_the_nats_scheme() -> None:
    assert fsspec.get_filesystem_class("nats") is NatsObjectFileSystem


def test_prefix_listings_behave_like_directories(fs, store, bucket_name: str) -> None:
    fs.pipe(f"{bucket_name}/raw/a.csv", b"a")
    fs.pipe(f"{bucket_name}/raw/2024/b.csv", b"bb")
    fs.pipe(f"{bucket_name}/top.txt", b"t")

    assert fs.ls(bucket_name, detail=False) == [f"{bucket_name}/raw", f"{bucket_name}/top.txt"]
    assert fs.ls(f"nats://{bucket_name}/raw/", detail=False) == [
        f"{bucket_name}/raw/2024",
        f"{bucket_name}/raw/a.csv",
    ]
    assert fs.isdir(f"{bucket_name}/raw") and fs.isdir(f"{bucket_name}/raw/2024")
    assert fs.isfile(f"{bucket_name}/raw/a.csv") and not fs.isdir(f"{bucket_name}/raw/a.csv")
    assert not fs.exists(f"{bucket_name}/ra")  # a name prefix is not a directory
    assert fs.find(bucket_name) == [
        f"{bucket_name}/raw/2024/b.csv",
        f"{bucket_name}/raw/a.csv",
        f"{bucket_name}/top.txt",
    ]
    assert fs.du(f"{bucket_name}/raw") == 3
    info = fs.info(f"{bucket_name}/raw/2024/b.csv")
    assert info["size"] == 2 and info["digest"].startswith("SHA-256=") and info["sequence"] > 0
    assert bucket_name in fs.ls("", detail=False)


def test_missing_paths_raise_file_not_found(fs, bucket_name: str) -> None:
    with pytest.raises(FileNotFoundError, match=f"nats://{bucket_name}/nope"):
        fs.info(f"{bucket_name}/nope")
    with pytest.raises(FileNotFoundError):
        fs.cat(f"{bucket_name}/nope")
    with pytest.raises(FileNotFoundError, match="no_such_bucket"):
        fs.ls("no_such_bucket/x")


def test_streamed_read_with_seeks_and_ranges(fs, bucket_name: str) -> None:
    data = bytes(range(256)) * 40_000  # ~10 MiB, many chunks
    fs.pipe(f"{bucket_name}/big.bin", data)
    with fs.open(f"{bucket_name}/big.bin", "rb", block_size=1 << 20) as handle:
        handle.seek(7_000_001)
        assert handle.read(5) == data[7_000_001:7_000_006]
        handle.seek(3)  # backwards: the reader is reopened
        assert handle.read(4) == data[3:7]
        handle.seek(-10, 2)
        assert handle.read() == data[-10:]
    assert (
        fs.cat_file(f"{bucket_name}/big.bin", start=131_070, end=131_075) == data[131_070:131_075]
    )
    assert fs.cat_file(f"{bucket_name}/big.bin", start=-3) == data[-3:]


def test_streamed_write_commits_on_close_and_never_on_error(fs, bucket_name: str) -> None:
    with fs.open(f"{bucket_name}/out/w.bin", "wb", block_size=1 << 20) as handle:
        for i in range(6):
            handle.write(bytes([i]) * 700_000)
    assert fs.cat(f"{bucket_name}/out/w.bin") == b"".join(bytes([i]) * 700_000 for i in range(6))

    with pytest.raises(RuntimeError), fs.open(f"{bucket_name}/out/partial.bin", "wb") as handle:
        handle.write(b"x" * (6 << 20))  # past one block: chunks were already sent
        raise RuntimeError("writer died")
    assert not fs.exists(f"{bucket_name}/out/partial.bin")

    with fs.open(f"{bucket_name}/out/empty", "wb"):
        pass
    assert fs.cat(f"{bucket_name}/out/empty") == b""
    with pytest.raises(NotImplementedError):
        fs.open(f"{bucket_name}/out/w.bin", "ab")


def test_put_get_copy_and_remove(fs, bucket_name: str, tmp_path) -> None:
    local = tmp_path / "in.txt"
    local.write_text("local file")
    fs.put_file(str(local), f"{bucket_name}/up/in.txt")
    fs.get_file(f"{bucket_name}/up/in.txt", str(tmp_path / "back.txt"))
    assert (tmp_path / "back.txt").read_text() == "local file"

    fs.copy(f"{bucket_name}/up/in.txt", f"{bucket_name}/copy/in.txt")
    assert fs.cat(f"{bucket_name}/copy/in.txt") == b"local file"

    fs.rm(f"{bucket_name}/up", recursive=True)
    assert fs.ls(bucket_name, detail=False) == [f"{bucket_name}/copy"]
    fs.rm_file(f"{bucket_name}/copy/in.txt")
    assert fs.ls(bucket_name, detail=False) == []


def test_buckets_are_made_and_removed_as_top_level_directories(fs, bucket_name: str) -> None:
    other = bucket_name + "_b"
    fs.mkdir(f"{other}/some/prefix", create_parents=True, mode=0o755, description="made by mkdir")
    assert fs.isdir(other)
    fs.makedirs(f"{other}/again", exist_ok=True)
    fs.pipe(f"{other}/x", b"1")
    with pytest.raises(OSError, match="not empty"):
        fs.rmdir(other)
    fs.rm(other, recursive=True)
    assert other not in fs.ls("", detail=False)


def test_pandas_round_trip_through_storage_options(nats_url: str, store, bucket_name: str) -> None:
    frame = pd.DataFrame({"city": ["Oslo", "Lima"], "temp": [3.5, 19.0]})
    url = f"nats://{bucket_name}/weather/day=1/part.parquet"
    frame.to_parquet(url, storage_options={"servers": nats_url})
    back = pd.read_parquet(url, storage_options={"servers": nats_url})
    # as fsspec's memory filesystem reads it back: pandas 2 adds the path's day=1 as a column
    # for any fsspec URL, pandas 3 does not
    peer = f"memory://{bucket_name}/weather/day=1/part.parquet"
    frame.to_parquet(peer)
    pd.testing.assert_frame_equal(back, pd.read_parquet(peer))


def test_a_second_event_loop_gets_its_own_connection(fs, bucket_name: str) -> None:
    """Driven from another thread's loop, the filesystem must not reuse the IO thread's client."""
    fs.pipe(f"{bucket_name}/k", b"v")
    results: list[bytes] = []

    def other_thread() -> None:
        async def main() -> None:
            results.append(await fs._cat_file(f"{bucket_name}/k"))

        asyncio.run(main())

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(30)
    assert results == [b"v"]
    assert fs.cat(f"{bucket_name}/k") == b"v"


# -- issue 28: what a bulk get writes below its local directory ----------------------------------


def test_get_recursive_writes_nothing_through_a_planted_symlink(
    fs, store, bucket_name: str, tmp_path
) -> None:
    """Point 10: ``dest/cfg -> ~victim/.ssh`` is refused for the objects below ``cfg`` (no
    file, no directory made through it), the rest is fetched, and the refusals are raised."""
    ssh = tmp_path / "victim" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "authorized_keys").write_bytes(b"the victim's key\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "cfg").symlink_to(ssh)
    store.put("r/cfg/authorized_keys", b"the attacker's key\n")
    store.put("r/cfg/sub/deeper", b"x")
    store.put("r/ok.txt", b"fine")

    with pytest.raises(UnsafeLocalPath) as refused:
        fs.get(f"{bucket_name}/r/", f"{dest}/", recursive=True)

    message = str(refused.value)
    assert "2 of 3 files" in message
    for name in ("r/cfg/authorized_keys", "r/cfg/sub/deeper"):
        assert repr(name) in message and str(dest / name.removeprefix("r/")) in message
    assert sorted(p.name for p in ssh.iterdir()) == ["authorized_keys"]
    assert (ssh / "authorized_keys").read_bytes() == b"the victim's key\n"
    assert (dest / "ok.txt").read_bytes() == b"fine"


def test_get_recursive_refuses_dot_dot_in_a_name_whatever_fsspec_does(
    fs, store, raw, bucket_name: str, tmp_path
) -> None:
    """The smaller point: a record another client published with ``../`` in its name maps to
    no local path below the destination. natsobj refuses it itself (fsspec below 2026 would
    write it above the destination; 2026 refuses the whole get with a ValueError), and the
    rest is fetched."""
    store.put("r/ok.txt", b"fine")
    info = store.put("r/payload", b"escaped")
    record = json.loads(raw.last_msg(meta_subject(bucket_name, "r/payload"), bucket_name).data)
    escaping = "r/x/../../../escape.txt"
    raw.publish(
        meta_subject(bucket_name, escaping), json.dumps({**record, "name": escaping}).encode()
    )
    assert info.nuid == store.get_info(escaping).nuid
    dest = tmp_path / "deep" / "dest"
    dest.mkdir(parents=True)

    with pytest.raises(UnsafeLocalPath) as refused:
        fs.get(f"{bucket_name}/r/", f"{dest}/", recursive=True)

    assert repr(escaping) in str(refused.value) and "'..'" in str(refused.value)
    assert (dest / "ok.txt").read_bytes() == b"fine"
    assert (dest / "payload").read_bytes() == b"escaped"
    assert (
        not (tmp_path / "escape.txt").exists() and not (tmp_path / "deep" / "escape.txt").exists()
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "dest", "ok.txt", "payload"]


def test_a_missing_bucket_keeps_its_hint(fs: NatsObjectFileSystem) -> None:
    """Issue 28: ``raise ... from None`` dropped the BucketNotFound, and its hint, that the
    FileNotFoundError was made from."""
    with pytest.raises(FileNotFoundError) as caught:
        fs.ls("nosuchbucket28/")
    assert isinstance(caught.value.__cause__, BucketNotFound)
    shown = "".join(traceback.format_exception(caught.value))
    assert "nosuchbucket28" in shown and BucketNotFound.hint in shown
