"""Reading a secret from a mount an orchestrator made: a Kubernetes Secret volume, a Docker
or Compose secret.

natsobj reads local secrets only from regular files of the user that no one else can read
or write, never through a symlink (``natsobj.local.files.read_private``). A Kubernetes Secret
cannot be that: its files are symlinks (``key -> ..data/key``, ``..data -> ..<timestamp>``)
into a tmpfs the kubelet mounts, mode 0644 by default, in a directory that is world-writable
with the sticky bit. What makes it safe is not its mode but who made it: only root (the
kubelet, the container runtime) can mount, and in a container the mount is seen by that
pod's processes alone. So a secret is accepted here when

- it is a mount point itself (a bind-mounted file: Docker and Compose secrets), or the
  directory holding it is a tmpfs or ramfs mount point (a Kubernetes Secret or projected
  volume, a Docker Swarm secret);
- each symlink on the way is owned by root or the current user and stays inside that mount;
- the file and each directory on the way belong to root or the current user, and no one else
  may write them (a directory others may write only with the sticky bit, so they cannot
  replace what root put there).

Readable by others is allowed: that is the default of such mounts. A file of a home
directory, however mounted, is never one of these unless its own directory is a tmpfs mount.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from natsobj.errors import UnsafeLocalState

MOUNTINFO = Path("/proc/self/mountinfo")
SECRET_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
MAX_LINKS = 8
OTHERS_WRITE = 0o022


def mounts() -> dict[str, str]:
    """Mount point → filesystem type, from ``/proc/self/mountinfo`` (the last mount of a point
    wins: it is the one in use)."""
    found = {}
    try:
        text = MOUNTINFO.read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        separator = fields.index("-")
        point = fields[4].encode().decode("unicode_escape")  # \040 for a space, and so on
        found[point] = fields[separator + 1]
    return found


def qualifies(path: Path) -> Path | None:
    """The mount that makes ``path`` a mounted secret, or None when it is not in one."""
    table = mounts()
    absolute = Path(os.path.abspath(path))
    if str(absolute) in table:
        return absolute
    if table.get(str(absolute.parent)) in SECRET_FILESYSTEMS:
        return absolute.parent
    return None


def read_mounted(path: Path) -> bytes | None:
    """``path``'s content when it is a mounted secret that passes the rules above; None when
    it is in no such mount (the caller's local rule decides); ``UnsafeLocalState`` when it is
    in one but another user could change it."""
    mount = qualifies(path)
    if mount is None:
        return None
    me = os.getuid()

    def refuse(problem: str) -> UnsafeLocalState:
        return UnsafeLocalState(
            f"{path} is in the mounted secret {mount}, but {problem}",
            hint="Mount the secret read-only with files and directories owned by root (the"
            " defaults of Kubernetes Secret volumes and Docker secrets).",
        )

    def check(where: Path, st: os.stat_result) -> None:
        if st.st_uid not in (0, me):
            raise refuse(f"{where} belongs to uid {st.st_uid}")
        # a symlink's own mode means nothing on Linux: its owner and its directory decide
        writable = st.st_mode & OTHERS_WRITE and not stat.S_ISLNK(st.st_mode)
        if writable and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            raise refuse(f"{where} has mode {stat.S_IMODE(st.st_mode):03o}: others can change it")

    current = Path(os.path.abspath(path))
    for _ in range(MAX_LINKS):
        st = os.lstat(current)
        if not stat.S_ISLNK(st.st_mode):
            break
        check(current, st)
        current = Path(os.path.normpath(current.parent / os.readlink(current)))
        if current != mount and mount not in current.parents:
            raise refuse(f"its link leads out of the mount, to {current}")
    else:
        raise refuse("it is a chain of too many symlinks")
    for directory in _inside(current.parent, mount):
        if os.path.islink(directory):  # ..data, the kubelet's switch between versions
            check(directory, os.lstat(directory))
    real = Path(os.path.realpath(current))
    if real != mount and mount not in real.parents:
        raise refuse(f"it leads out of the mount, to {real}")
    for directory in [*_inside(real.parent, mount), mount]:
        check(directory, os.lstat(directory))
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise refuse(f"{real} cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        opened = os.fstat(file.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise refuse(f"{real} is not a regular file")
        check(real, opened)
        return file.read()


def _inside(directory: Path, mount: Path) -> list[Path]:
    """``directory`` and its parents below ``mount`` (the mount itself not included)."""
    chain = []
    while directory != mount and mount in directory.parents:
        chain.append(directory)
        directory = directory.parent
    return chain
