"""The mode of files natsobj writes for a user (``get_file``): what any program's new file
would get, or the mode of the file being replaced, so a fetch neither hides a file from the
user's group nor widens a private one."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path

NEW_FILE_MODE = 0o666  # what open(2) is asked for before the umask, as cp and curl do
_PERMISSIONS = 0o777  # never setuid/setgid/sticky: new bytes must not inherit a privilege
_umask_lock = threading.Lock()


def umask() -> int:
    """The process umask. Linux shows it in /proc; elsewhere ``os.umask`` must set it to read
    it, so the lock keeps other natsobj threads from creating a file in that instant."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _umask_lock:
        current = os.umask(0o077)
        os.umask(current)
        return current


def replacement_mode(destination: str | os.PathLike[str]) -> int:
    """The permissions a file written to ``destination`` should end with: the existing
    file's, else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(destination).st_mode) & _PERMISSIONS
    except FileNotFoundError:
        return NEW_FILE_MODE & ~umask()
