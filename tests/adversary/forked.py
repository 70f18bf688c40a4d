"""The adversary's forked writer (issue 39, finding 1): an honest put made in a child forked
from the harness, after natsobj has been imported and used here, as Airflow's LocalExecutor,
Celery's prefork pool and ``multiprocessing`` fork their workers. The child's object must be
stored under a nuid no other object holds and read back whole, and every other honest object
must stay intact (the model's invariants check that after every step)."""

from __future__ import annotations

import json
import os
import select
import time

from hypothesis import strategies as st

import natsobj
from tests.adversary.attacks import HONEST_NAMES
from tests.adversary.world import CALL_BOUND, Violation, World, random_bytes


def forked_put(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(HONEST_NAMES), label="honest name")
    size = data.draw(st.sampled_from([0, 100, 5000, 70_000]), label="size")
    payload = random_bytes(size, data.draw(st.integers(0, 2**30), label="seed"))
    label = f"put({name!r}, {size} bytes) in a forked child"
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: put, report, and leave without the parent's exit handlers
        os.close(reader)
        _put_in_child(world.url, world.bucket, name, payload, writer)
    os.close(writer)
    try:
        report = _report(reader, label)
    finally:
        os.close(reader)
        os.waitpid(pid, 0)
    if "error" in report:
        if not world.rules_attacked:
            raise Violation(f"{label} failed: {report['error']}")
        return
    ok, info = world.call("get_info", lambda: world.a.get_info(name))
    if not ok or (info.nuid, info.sequence) != (report["nuid"], report["sequence"]):
        raise Violation(f"{label} returned {report}, but the bucket holds {info!r}")
    others = {other: h.nuid for other, h in world.honest.items() if other != name}
    if info.nuid in others.values():
        raise Violation(f"{label} stored {name!r} under the nuid of another object: {others}")
    world.check_info(label, info)
    world.remember_put(name, payload, info)


def _put_in_child(url: str, bucket: str, name: str, payload: bytes, writer: int) -> None:
    report: dict[str, object]
    try:
        client = natsobj.connect(url)
        info = client.store(bucket).put(name, payload, chunk_size=4096)
        client.close()
        report = {"nuid": info.nuid, "sequence": info.sequence}
    except BaseException as exc:
        report = {"error": repr(exc)}
    try:
        os.write(writer, json.dumps(report).encode())
    finally:
        os._exit(0)


def _report(reader: int, label: str) -> dict[str, object]:
    """The child's report, read within the bound of a call (and a child's start)."""
    deadline = time.monotonic() + CALL_BOUND + 5
    received = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([reader], [], [], left)[0]:
            raise Violation(f"{label}: no report after {CALL_BOUND + 5:.0f}s")
        block = os.read(reader, 65536)
        if not block:
            break
        received += block
    if not received:
        raise Violation(f"{label}: the child died without a report")
    report: dict[str, object] = json.loads(received)
    return report
