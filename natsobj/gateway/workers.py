"""``--workers N``: N gateway processes serving one listening socket.

The supervising process binds the socket, forks the workers (each runs the gateway's event
loop on the inherited socket; the kernel hands each new connection to one of them) and waits.
A shared socket rather than one per worker (SO_REUSEPORT): a worker that stops closes only
its own copy, so connections waiting to be accepted go to the others, never reset.

SIGTERM or SIGINT to the supervisor is passed to every worker, which stops accepting, lets its
requests in flight finish (``Limits.drain_timeout``) and exits; a worker still running
``grace`` seconds later is killed. A worker that dies while the gateway serves is replaced,
unless it died within ``MIN_LIFETIME`` of starting (a fault that would repeat at once: the
gateway stops instead). Multipart uploads live in NATS, so an upload a stopped worker was
part of continues on any other worker or gateway.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

log = logging.getLogger(__name__)

MIN_LIFETIME = 5.0
POLL_SECONDS = 0.1


def default_count() -> int:
    """One worker per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


class Supervisor:
    """Forks ``count`` workers running ``work`` (its return value is the exit status)."""

    def __init__(
        self,
        count: int,
        work: Callable[[], int],
        *,
        grace: float,
        on_exit: Callable[[int], None] = lambda pid: None,
    ) -> None:
        self.count = count
        self.work = work
        self.grace = grace
        self.on_exit = on_exit
        self.children: dict[int, float] = {}  # pid: when it started
        self.stop_requested: float | None = None
        self._exited: list[tuple[int, float]] = []  # (pid, how long it ran) of unplanned exits

    def _spawn(self) -> None:
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                status = self.work()
            except BaseException:
                log.exception("gateway worker %d failed", os.getpid())
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        self.children[pid] = time.monotonic()

    def _stop(self, signum: int, _: FrameType | None) -> None:
        if self.stop_requested is None:
            self.stop_requested = time.monotonic()
        for pid in self.children:
            os.kill(pid, signal.SIGTERM)

    def run(self, announce: Callable[[], None]) -> bool:
        """Serve until stopped (True) or until a worker died at once (False)."""
        previous = {
            signum: signal.signal(signum, self._stop) for signum in (signal.SIGTERM, signal.SIGINT)
        }
        healthy = True
        try:
            for _ in range(self.count):
                self._spawn()
            announce()
            while self.children:
                self._reap()
                replacing = self.stop_requested is None and len(self.children) < self.count
                if replacing and not self._replace():
                    healthy = False
                    self._stop(signal.SIGTERM, None)
                if (
                    self.stop_requested is not None
                    and time.monotonic() - self.stop_requested > self.grace
                ):
                    for pid in self.children:
                        os.kill(pid, signal.SIGKILL)
                time.sleep(POLL_SECONDS)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return healthy

    def _reap(self) -> None:
        while self.children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            started = self.children.pop(pid, None)
            if started is None:
                continue
            self.on_exit(pid)
            if self.stop_requested is None:
                log.warning(
                    "gateway worker %d exited with status %d",
                    pid,
                    os.waitstatus_to_exitcode(status),
                )
                self._exited.append((pid, time.monotonic() - started))

    def _replace(self) -> bool:
        """Start workers for those that died; False when one died at once."""
        exited, self._exited = self._exited, []
        if any(lifetime < MIN_LIFETIME for _, lifetime in exited):
            return False
        while len(self.children) < self.count:
            self._spawn()
        return True
