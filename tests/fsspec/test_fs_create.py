"""Create-only writes through ``nats://`` (fsspec's ``mode="create"`` and ``open(path, "xb")``)
against a real server: they refuse an existing object with FileExistsError, and of writers
racing to create one name exactly one wins, because the write is the core's compare-and-swap
put, not a look-up followed by a put."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

from natsobj.errors import ObjectExists
from natsobj.fs import NatsObjectFileSystem

WRITERS = 8


@pytest.fixture
def fs(nats_url: str, store) -> NatsObjectFileSystem:
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def race(actions: list[Callable[[], Any]]) -> list[BaseException | None]:
    """Run each action on its own thread, all released at once; each one's error or None."""
    start = threading.Barrier(len(actions))
    outcomes: list[BaseException | None] = [None] * len(actions)

    def run(index: int) -> None:
        start.wait()
        try:
            actions[index]()
        except BaseException as exc:  # the outcome is what the test checks
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def one_winner(outcomes: list[BaseException | None]) -> int:
    """The index of the only writer that succeeded; every other one got FileExistsError."""
    winners = [i for i, outcome in enumerate(outcomes) if outcome is None]
    assert len(winners) == 1, outcomes
    losers = [outcome for outcome in outcomes if outcome is not None]
    assert all(isinstance(outcome, FileExistsError) for outcome in losers), losers
    return winners[0]


def test_pipe_file_create_refuses_an_existing_object(fs, bucket_name: str) -> None:
    path = f"{bucket_name}/a.txt"
    fs.pipe_file(path, b"first")
    with pytest.raises(FileExistsError, match=f"nats://{path}") as raised:
        fs.pipe_file(path, b"second", mode="create")
    assert isinstance(raised.value.__cause__, ObjectExists)
    assert fs.cat_file(path) == b"first"
    fs.pipe_file(path, b"third", mode="overwrite")
    assert fs.cat_file(path) == b"third"


def test_put_file_create_refuses_an_existing_object(fs, bucket_name: str, tmp_path: Path) -> None:
    local = tmp_path / "f.bin"
    local.write_bytes(b"local")
    path = f"{bucket_name}/f.bin"
    fs.put_file(str(local), path, mode="create")
    with pytest.raises(FileExistsError):
        fs.put_file(str(local), path, mode="create")
    assert fs.cat_file(path) == b"local"


def test_a_deleted_name_can_be_created_again(fs, bucket_name: str) -> None:
    path = f"{bucket_name}/gone.txt"
    fs.pipe_file(path, b"old")
    fs.rm(path)
    fs.pipe_file(path, b"new", mode="create")
    assert fs.cat_file(path) == b"new"
    fs.rm(path)
    with fs.open(path, "xb") as handle:
        handle.write(b"newer")
    assert fs.cat_file(path) == b"newer"


def test_an_unknown_write_mode_is_refused_not_taken_as_overwrite(fs, bucket_name: str) -> None:
    with pytest.raises(ValueError, match="'overwrite' or 'create'"):
        fs.pipe_file(f"{bucket_name}/m.txt", b"x", mode="exclusive")
    assert not fs.exists(f"{bucket_name}/m.txt")


def test_racing_pipe_file_creators_have_exactly_one_winner(fs, bucket_name: str) -> None:
    path = f"{bucket_name}/race.txt"
    outcomes = race(
        [
            lambda i=i: fs.pipe_file(path, f"writer {i}".encode(), mode="create")
            for i in range(WRITERS)
        ]
    )
    winner = one_winner(outcomes)
    assert fs.cat_file(path) == f"writer {winner}".encode()


def test_racing_exclusive_opens_have_exactly_one_winner(fs, bucket_name: str) -> None:
    """Every writer opens the absent name (all pass the open-time check) and writes before
    any closes; the closes race, and only one of them may create the object."""
    path = f"{bucket_name}/race.bin"
    handles = [fs.open(path, "xb") for _ in range(WRITERS)]
    for i, handle in enumerate(handles):
        handle.write(f"writer {i}".encode() * 1000)
    outcomes = race([handle.close for handle in handles])
    winner = one_winner(outcomes)
    assert fs.cat_file(path) == f"writer {winner}".encode() * 1000
    assert all(handle.closed for handle in handles)
