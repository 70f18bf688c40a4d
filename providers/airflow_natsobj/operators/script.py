"""A script run as its own process group, so that it can be stopped whole (the script and
whatever it started) when the task that runs it stops: on Airflow's ``execution_timeout``, on
``on_kill`` or on any other error while it runs."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from types import TracebackType

from airflow_natsobj.log.lines import MAX_LINE_BYTES

STOP_GRACE_SECONDS = 2.0
"""How long a script has after SIGTERM to exit before its process group gets SIGKILL. Well
below the five seconds Airflow's task supervisor leaves a task between its SIGTERM and its
SIGKILL: the script's group is not the task's, so the supervisor's signals never reach it, and
the task must finish stopping it (in ``on_kill``) before it is killed itself."""


class ScriptProcess:
    """``command`` started in a process group of its own, its output and errors one stream.

    As a context manager: leaving the block with an exception (``AirflowTaskTimeout`` raised by
    Airflow's alarm while the script runs, among others) stops the group, and the script is
    always reaped on the way out, so no task ends with its script still running."""

    def __init__(self, command: list[str]) -> None:
        self._process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            close_fds=True,
            process_group=0,
        )
        self.stopped = False

    def __enter__(self) -> ScriptProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.stop()
        self.wait()

    def lines(self) -> Iterator[str]:
        """The script's output, a line at a time as it comes, until it closes it. A line longer
        than ``MAX_LINE_BYTES`` comes in pieces of that size: a script that echoes an object
        without newlines must not make the worker hold the object whole."""
        if self._process.stdout is None:
            return
        while line := self._process.stdout.readline(MAX_LINE_BYTES):
            yield line.decode(sys.getdefaultencoding(), "replace").rstrip()

    def wait(self) -> int:
        """Wait for the script to exit, reap it and return its exit status (negative: the
        signal that ended it)."""
        if self._process.stdout:
            self._process.stdout.close()
        return self._process.wait()

    def stop(self) -> None:
        """SIGTERM to the script's process group, then SIGKILL to whatever is left of it once
        the script has exited or ``STOP_GRACE_SECONDS`` have passed.

        Never reaps the script, so it may run in a signal handler (Airflow calls ``on_kill``
        from its SIGTERM handler) while ``wait`` blocks, and the group's id (the script's pid)
        cannot pass to another process before the SIGKILL is sent."""
        if self._process.returncode is not None:
            return  # reaped: its group's id may belong to someone else by now
        self.stopped = True
        _signal_group(self._process.pid, signal.SIGTERM)
        _await_exit(self._process.pid, STOP_GRACE_SECONDS)
        _signal_group(self._process.pid, signal.SIGKILL)


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has exited
        os.killpg(group, signum)


def _await_exit(pid: int, seconds: float) -> None:
    """Return once process ``pid`` has exited, or after ``seconds``, without reaping it."""
    if not hasattr(os, "pidfd_open"):  # not Linux: no way to wait without reaping
        time.sleep(seconds)
        return
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:  # reaped meanwhile by the thread running the script
        return
    try:
        select.select([pidfd], [], [], seconds)
    finally:
        os.close(pidfd)
