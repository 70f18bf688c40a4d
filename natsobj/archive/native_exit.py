"""A clean interpreter exit after obstore calls.

obstore completes every call on one of its tokio threads, which enters Python to wake the
event loop (``call_soon_threadsafe`` writes to the loop's self-pipe, releasing the GIL for the
write) and leaves Python a moment after the loop has already resumed. When that moment is the
program's last, the main thread can start finalizing the interpreter first; on Python 3.11 to
3.13 a thread that then asks for the GIL back is ended with ``pthread_exit``, whose forced
unwinding cannot cross the Rust frames below it, and the whole process aborts (SIGABRT, exit
134, "Fatal Python error: Aborted") after the command had printed its correct result.
obstore's runtime has no shutdown call, so the wait happens on our side, before finalization.
"""

from __future__ import annotations

import sys
import threading
import time

EXIT_WAIT_LIMIT = 1.0  # seconds: such a thread needs microseconds; never hang an exit for long


def native_threads_in_python() -> bool:
    """Whether a thread the ``threading`` module did not start is running Python code now
    (a native thread that took the GIL through the C API, such as obstore's completions)."""
    started_here = {thread.ident for thread in threading.enumerate()}
    return any(ident not in started_here for ident in sys._current_frames())


def let_native_threads_leave_python(limit: float = EXIT_WAIT_LIMIT) -> None:
    """Registered with ``atexit`` (which runs before finalization): release the GIL until no
    native thread is inside Python any more, so none is there when finalization begins."""
    deadline = time.monotonic() + limit
    while native_threads_in_python() and time.monotonic() < deadline:
        time.sleep(0.001)
