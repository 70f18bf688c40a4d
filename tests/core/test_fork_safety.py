"""Issue 39, finding 1: puts from processes forked after ``import natsobj`` overwrote each
other's objects. Each child inherited its parent's nuid generator, so the children drew the
same chunk subjects; both puts returned success and one object was gone (a fork Pool of 3
putting 9 objects kept 3). Now a child draws its own ids, and a put whose nuid another put
holds is refused at its first chunk and put again under another: both objects survive."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

import natsobj
from natsobj.aio import atomic_put, put_pipeline
from natsobj.aio.jetstream import nuids
from natsobj.sync import run

CHILDREN = 3
PUTS_PER_CHILD = 3
POOL_OBJECTS = 9
CHUNK = 1024


def _payload(name: str, size: int) -> bytes:
    """Bytes that differ from object to object, so a read of another object's chunks shows."""
    return (name.encode() * (size // len(name) + 1))[:size]


def _put_in_child(url: str, bucket: str, names: list[str]) -> None:
    """Runs in a forked child: put each name, then leave without running the parent's
    exit handlers (pytest's, the parent's shared connections)."""
    code = 1
    try:
        client = natsobj.connect(url)
        store = client.store(bucket)
        for name in names:
            store.put(name, _payload(name, 5 * CHUNK), chunk_size=CHUNK)
        client.close()
        code = 0
    except BaseException as exc:  # the exit code reports it; the parent shows the object
        print(f"child {os.getpid()}: {exc!r}", file=sys.stderr)
    finally:
        os._exit(code)


def _assert_all_readable(store, names: list[str]) -> None:
    infos = {name: store.get_info(name) for name in names}
    assert {name: store.get_bytes(name) for name in names} == {
        name: _payload(name, 5 * CHUNK) for name in names
    }
    assert len({info.nuid for info in infos.values()}) == len(names), infos


def test_children_forked_after_import_keep_every_object(store, nats_url):
    """As found: two children forked after ``import natsobj`` each put an object; both got
    one nuid, both puts succeeded, one object read as ObjectNotFound."""
    store.put("parent", b"drawn before the fork")  # the parent's generator is in use
    names = {
        pid_slot: [f"child{pid_slot}-{n}" for n in range(PUTS_PER_CHILD)]
        for pid_slot in range(CHILDREN)
    }
    pids = []
    for slot in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            _put_in_child(nats_url, store.bucket, names[slot])
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    assert codes == [0] * CHILDREN
    _assert_all_readable(store, [name for slot in range(CHILDREN) for name in names[slot]])
    assert store.get_bytes("parent") == b"drawn before the fork"


# Run in an interpreter of its own, as an Airflow or Celery worker is: one that imported and
# used natsobj, then forks its pool. (Forked from the test process instead, the workers would
# also inherit whatever the suite's other tests left in it: a SparkContext's signal handler
# that talks to its JVM over the parent's socket hung one at its exit.)
POOL_SCRIPT = """
import json, multiprocessing, sys
import natsobj

url, bucket, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def payload(name):
    return (name.encode() * (5 * 1024 // len(name) + 1))[: 5 * 1024]

def put(name):
    client = natsobj.connect(url)
    try:
        return client.store(bucket).put(name, payload(name), chunk_size=1024).nuid
    finally:
        client.close()

if __name__ == "__main__":
    client = natsobj.connect(url)  # the parent's generator and connection are in use
    client.store(bucket).put("pool-parent", b"drawn before the fork")
    with multiprocessing.get_context("fork").Pool(3) as pool:
        print(json.dumps(pool.map(put, names)))
    client.close()
"""


def test_a_fork_pool_keeps_every_object(store, nats_url, tmp_path):
    """As found: a fork Pool of 3 putting 9 objects kept 3."""
    names = [f"pooled-{n}" for n in range(POOL_OBJECTS)]
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), nats_url, store.bucket, json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout)
    assert len(set(drawn)) == POOL_OBJECTS
    _assert_all_readable(store, names)


def test_a_child_draws_other_ids_than_its_parent():
    """The generator itself: the parent's next ids and a forked child's differ."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        os.write(writer, " ".join(nuids.next_nuid() for _ in range(3)).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        child = pipe.read().decode().split()
    os.waitpid(pid, 0)
    parent = [nuids.next_nuid() for _ in range(3)]
    assert len(child) == 3 and not set(child) & set(parent)


# -- a collision, however it happens, is detected and the put goes under another nuid ----------

TAKEN = "COLLIDINGNUIDCOLLIDING"


@pytest.fixture
def colliding(monkeypatch):
    """Arm it and the next put's first nuid is ``TAKEN``: a seam where a put draws its nuid
    (both the windowed and the atomic way), not a change of what the server does."""
    armed: list[str] = []
    real = nuids.next_nuid

    def draw() -> str:
        return armed.pop() if armed else real()

    monkeypatch.setattr(put_pipeline, "next_nuid", draw)
    monkeypatch.setattr(atomic_put, "next_nuid", draw)
    return lambda: armed.append(TAKEN)


ATOMIC = 1 << 40  # atomic_max_bytes: every object that fits a batch goes as one
WINDOWED = 0


@pytest.mark.parametrize("size", [10, 5 * CHUNK], ids=["one-chunk", "five-chunks"])
@pytest.mark.parametrize(
    "first_way,second_way",
    [(WINDOWED, WINDOWED), (ATOMIC, ATOMIC), (WINDOWED, ATOMIC), (ATOMIC, WINDOWED)],
    ids=["windowed", "atomic", "windowed-then-atomic", "atomic-then-windowed"],
)
def test_two_puts_drawing_one_nuid_both_survive(store, raw, colliding, size, first_way, second_way):
    store.aio.atomic_max_bytes = first_way
    colliding()
    first = store.put("first", _payload("first", size), chunk_size=CHUNK)
    store.aio.atomic_max_bytes = second_way
    colliding()
    second = store.put("second", _payload("second", size), chunk_size=CHUNK)
    assert first.nuid == TAKEN and second.nuid not in ("", TAKEN)
    assert store.get_bytes("first") == _payload("first", size)
    assert store.get_bytes("second") == _payload("second", size)
    # the taken subject holds exactly the first object's chunks, none of the refused put's
    chunks = _subject_messages(raw, store.bucket, f"$O.{store.bucket}.C.{TAKEN}")
    assert b"".join(chunks) == _payload("first", size)


def _subject_messages(raw, bucket: str, subject: str) -> list[bytes]:
    """Every message on ``subject``, in order, read with STREAM.MSG.GET (not natsobj)."""

    async def go() -> list[bytes]:
        found: list[bytes] = []
        sequence = 1
        while True:
            request = json.dumps({"seq": sequence, "next_by_subj": subject}).encode()
            reply = json.loads((await raw.nc.request(api + bucket, request)).data)
            if "error" in reply:
                return found
            found.append(base64.b64decode(reply["message"].get("data") or b""))
            sequence = int(reply["message"]["seq"]) + 1

    api = "$JS.API.STREAM.MSG.GET.OBJ_"
    return run(go())


def test_replacing_an_object_of_no_chunks_spares_the_object_holding_its_nuid(store, colliding):
    """An empty object sends no chunk, so it claims no subject: a later object may hold its
    nuid, and replacing the empty one must not purge that object's chunks."""
    store.aio.atomic_max_bytes = WINDOWED
    colliding()
    assert store.put("empty", b"").nuid == TAKEN
    colliding()
    assert store.put("full", _payload("full", 5 * CHUNK), chunk_size=CHUNK).nuid == TAKEN
    store.put("empty", b"replaced")
    assert store.get_bytes("full") == _payload("full", 5 * CHUNK)
