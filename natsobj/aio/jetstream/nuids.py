"""Unique tokens the client makes up: the nuid of a version's chunk subject, the id of an
atomic batch, the name of a consumer. One generator for the process, behind a lock, like
nats.go's ``nuid.Next()``: tokens drawn from two copies of it could repeat only by chance,
from one never, and clients on other threads' event loops share it safely.

A forked child would inherit a copy of its parent's generator and draw the very tokens its
parent and its siblings draw (Airflow's LocalExecutor, Celery's prefork pool, multiprocessing
with the fork start method all fork after ``import natsobj``), so the child starts a generator
of its own: at the fork (``os.register_at_fork``), and on the first token drawn in a process
whose id is not the generator's, for a fork the hooks did not see (a C library's ``fork()``).
Puts do not rely on this alone: a put claims its nuid's chunk subject before filling it
(``natsobj.aio.jetstream.publish``), so two puts holding one nuid can never merge."""

from __future__ import annotations

import os
import secrets
import threading

from nats.nuid import NUID


class _Generator:
    """The process's generator, the lock around it, and the process it belongs to."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.nuid = NUID()  # seeded from the operating system's randomness
        # a new lock too: another thread may have held the parent's at the fork, and in the
        # child nothing would ever release it
        self.lock = threading.Lock()


_current = _Generator()


def _restart() -> None:
    global _current
    _current = _Generator()


os.register_at_fork(after_in_child=_restart)


def next_nuid() -> str:
    """A new 22-character token, unique in this process and random across processes."""
    generator = _current
    if generator.pid != os.getpid():
        _restart()
        generator = _current
    with generator.lock:
        return generator.nuid.next().decode()


def put_id(nuid: str) -> str:
    """The base of a put's message ids (``natsobj.wire.chunk_msg_id``, ``meta_msg_id``): its
    nuid and a random part of its own from the operating system. The stream's duplicate
    detection then never takes one put's chunk or record for another's, even when two puts
    hold one nuid, and a put can tell its own stored chunk from another's."""
    return f"{nuid}.{secrets.token_hex(4)}"
