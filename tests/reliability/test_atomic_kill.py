"""SIGKILL a client in the middle of an atomic put (one ADR-50 batch): the server never
stores any of it, so no chunk is left behind and the previous version stays intact, with
nothing for compact() to find (today's put, killed the same way, leaves orphans:
test_faults.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CHUNK = 64 * 1024
WINDOW = 4 * CHUNK
STALL_AT = 24  # the read that stalls: by then the chunks before the window are acknowledged

# The killed client: puts a file atomically through a handle whose read number STALL_AT
# reports that earlier chunks were staged by the server (the put waited for their
# acknowledgements to keep its window) and then stalls until the test kills the process.
CLIENT = """
import io, sys, time
import natsobj

class Stalling(io.FileIO):
    reads = 0
    def read(self, size=-1):
        Stalling.reads += 1
        if Stalling.reads == {stall_at}:
            print("STAGED", flush=True)
            time.sleep(600)
        return super().read(size)

client = natsobj.connect({url!r}, put_window_bytes={window})
store = client.store("crash")
store.aio.atomic_max_bytes = 1 << 40
store.put("artifact", Stalling({path!r}), chunk_size={chunk})
print("FINISHED", flush=True)
"""


def _staged_batches(server, bucket: str) -> list[Path]:
    """The batches the server holds for the bucket's stream (one directory each)."""
    stream_dir = next(server.data_dir.rglob(f"streams/OBJ_{bucket}"))
    batches = stream_dir / "batches"
    return list(batches.iterdir()) if batches.is_dir() else []


def test_sigkill_mid_atomic_put_leaves_nothing_behind(own_server, own_client, tmp_path):
    store = own_client.create_store("crash")
    previous = os.urandom(300_000)
    store.put("artifact", previous)
    before = store.status()
    data_file = tmp_path / "big.bin"
    data_file.write_bytes(os.urandom(60 * CHUNK))  # fits one batch: 60 chunks + the record
    script = CLIENT.format(
        url=own_server.url, window=WINDOW, path=str(data_file), chunk=CHUNK, stall_at=STALL_AT
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = child.stdout.readline().strip()
        assert line == "STAGED", child.stderr.read()
        # the server holds a batch in flight for the stream (staged on disk, R1 file store)
        assert _staged_batches(own_server, "crash")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    after = store.status()
    assert after.messages == before.messages and after.last_sequence == before.last_sequence
    assert store.get_bytes("artifact") == previous  # digest verified on read
    assert [i.name for i in store.list()] == ["artifact"]
    # the server drops the abandoned batch after its inactivity timeout (10 s) and stores
    # nothing of it then either
    deadline = time.monotonic() + 20
    while _staged_batches(own_server, "crash") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _staged_batches(own_server, "crash")
    assert store.status().last_sequence == before.last_sequence
    assert store.compact(min_age=0).purged_messages == 0  # no orphans to reclaim
    # and the name takes a new atomic put as usual
    store.aio.atomic_max_bytes = 1 << 40
    assert store.put("artifact", data_file, chunk_size=CHUNK).chunks == 60
    assert store.get_bytes("artifact") == data_file.read_bytes()
