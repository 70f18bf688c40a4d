"""The files natsobj writes or keeps for a user, and where it may put them.

* **Mode** (``replacement_mode``): what any program's new file would get, or the mode of the
  file being replaced, so a fetch neither hides a file from the user's group nor widens a
  private one.
* **Replacement** (``replacing``): a fetched file is written beside its target and renamed
  over it only once verified, whatever filesystem holds it; a local one keeps its mode.
* **Place** (``local_relative``, ``open_target``): an object's name below a prefix maps to a
  path below the local directory being filled, and the file is written only there. A name
  with ``..`` has no such path, and a symlink already in the directory (``dest/cfg ->
  ~victim/.ssh``) is not followed out of it: the directory the file goes in is opened
  component by component from the root, proven to be inside it, and the file is created and
  renamed relative to that open directory, so nothing swapped in afterwards redirects it.
* **Ownership** (``check_private``): local state natsobj trusts (the embedded server's data
  directory, the name index cache) must belong to the current user and be writable by no
  one else.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from natsobj.errors import UnsafeLocalPath, UnsafeLocalState

NEW_FILE_MODE = 0o666  # what open(2) is asked for before the umask, as cp and curl do
_PERMISSIONS = 0o777  # never setuid/setgid/sticky: new bytes must not inherit a privilege
OTHERS_WRITE = 0o022  # group or others may change it
OTHERS_ANY = 0o077  # group or others may read or change it
NAME_MAX = 255
"""Bytes in one path component on Linux filesystems: a longer name cannot be written at all."""
SEP = "/"
_PROC_FD = Path("/proc/self/fd")
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


def replacement_mode(destination: str | os.PathLike[str], *, dir_fd: int | None = None) -> int:
    """The permissions a file written to ``destination`` should end with: the existing
    file's, else 0666 less the umask. A symlink there is replaced, not followed, so its
    target's mode is not taken either."""
    try:
        st = os.stat(destination, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is None or stat.S_ISLNK(st.st_mode):
        return NEW_FILE_MODE & ~umask()
    return stat.S_IMODE(st.st_mode) & _PERMISSIONS


# -- the place of a file below the directory a transfer fills -----------------------------------


def local_relative(relative_name: str) -> str:
    """The '/'-joined local path an object name below a prefix is written to.

    Empty and '.' segments are dropped, as the filesystem would resolve them, so 'x', './x',
    'x/' and '/x' all land on 'x'; callers compare these, never the raw names, or two objects
    silently overwrite each other and ``sync --delete`` removes what it just fetched. Raises
    ``ValueError`` with the reason when the name cannot be a path inside the directory.
    """
    if "\0" in relative_name:
        raise ValueError("it contains a NUL byte")
    parts = [p for p in relative_name.split(SEP) if p not in ("", ".")]
    if ".." in parts:
        raise ValueError("a '..' segment would leave the directory")
    if not parts:
        raise ValueError("it names the directory itself")
    for part in parts:
        try:
            encoded = os.fsencode(part)
        except UnicodeEncodeError:
            raise ValueError("it cannot be encoded as a file name") from None
        if len(encoded) > NAME_MAX:
            raise ValueError(f"a segment is longer than {NAME_MAX} bytes")
    return SEP.join(parts)


def _opened_path(fd: int) -> str | None:
    """Where the directory open as ``fd`` is now, as the kernel sees it (None: unknown here)."""
    try:
        return os.readlink(_PROC_FD / str(fd))
    except OSError:
        return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(SEP) + SEP)


class PartPlace(Protocol):
    """Where ``replacing`` writes a file: beside its target, through the filesystem that
    holds it (a local directory, ``LocalTarget``; or another, such as an fsspec one)."""

    file_name: str
    """The target's name in its directory, which the part's name is made from."""

    def create_part(self, part_name: str, buffering: int) -> BinaryIO:
        """A new file ``part_name`` beside the target, open for writing; FileExistsError
        when one of that name is there already."""
        ...

    def commit_part(self, part_name: str, handle: BinaryIO) -> None:
        """Rename the written part over the target (the mode the target keeps is this
        place's to give)."""
        ...

    def remove_part(self, part_name: str) -> None:
        """Remove the part, if it is there."""
        ...


@contextlib.contextmanager
def replacing(place: PartPlace, buffering: int = -1) -> Iterator[BinaryIO]:
    """The one rule every face writes a fetched file by: into a new hidden file beside the
    target (``.<name>.<random>.part``), renamed over the target only when the block ends
    without raising, that is once the caller has every byte and verified them. No reader
    ever sees a partial file under the target's name, and a failed or refused read leaves
    the target as it was and no part behind."""
    while True:
        part_name = f".{place.file_name}.{secrets.token_hex(4)}.part"
        try:
            handle = place.create_part(part_name, buffering)
            break
        except FileExistsError:
            continue
    committed = False
    try:
        with handle:
            yield handle
            place.commit_part(part_name, handle)
            committed = True
    finally:
        if not committed:
            place.remove_part(part_name)


class LocalTarget:
    """The directory a file goes in, held open, and the file's name in it: the ``PartPlace``
    of a local file. Parts are made and renamed relative to the open directory, so the
    rename replaces a symlink at the file's name rather than following it, and the file
    keeps the mode of the one it replaces (``replacement_mode``)."""

    def __init__(
        self, directory_fd: int, file_name: str, path: Path, root: str | None, refuse: _Refusal
    ) -> None:
        self.directory_fd = directory_fd
        self.file_name = file_name
        self.path = path
        self._root = root  # the real path of the directory being filled, when there is one
        self._refuse = refuse

    def create_part(self, part_name: str, buffering: int) -> BinaryIO:
        """A new file (0600, never an existing one, never through a symlink)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(part_name, flags, 0o600, dir_fd=self.directory_fd)
        return os.fdopen(fd, "wb", buffering=buffering)

    def commit_part(self, part_name: str, handle: BinaryIO) -> None:
        """Give the part the target's mode and rename it over the target, once the open
        directory is proven still inside the directory being filled."""
        handle.flush()
        os.fchmod(handle.fileno(), replacement_mode(self.file_name, dir_fd=self.directory_fd))
        if self._root is not None:
            now = _opened_path(self.directory_fd)
            if now is not None and not _inside(now, self._root):
                raise self._refuse(f"{self.path.parent} now leads to {now}, outside {self._root}")
        os.replace(
            part_name, self.file_name, src_dir_fd=self.directory_fd, dst_dir_fd=self.directory_fd
        )

    def remove_part(self, part_name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part_name, dir_fd=self.directory_fd)


class _Refusal:
    """Builds the UnsafeLocalPath of one object and one local path."""

    def __init__(self, path: Path, bucket: str | None, name: str | None) -> None:
        self.path, self.bucket, self.name = path, bucket, name

    def __call__(self, why: str) -> UnsafeLocalPath:
        return UnsafeLocalPath(
            f"not written to {self.path}: {why}", bucket=self.bucket, name=self.name
        )


@contextlib.contextmanager
def open_target(
    path: str | os.PathLike[str],
    within: str | os.PathLike[str] | None = None,
    *,
    bucket: str | None = None,
    name: str | None = None,
) -> Iterator[LocalTarget]:
    """The directory ``path`` goes in, opened (and made where missing).

    Without ``within`` the user named ``path`` and it is taken as written, symlinks and all.
    With it, ``path`` was made from an object's name below the directory ``within`` that a
    transfer fills, and must stay there: each directory between them is made and opened
    relative to the one before, and one that leads out of ``within`` (a symlink planted
    there) is refused with ``UnsafeLocalPath`` naming ``bucket``/``name`` and ``path``,
    before anything is made or written beyond it. Where the kernel cannot say where an open
    directory is (no /proc), no symlink between them is followed at all."""
    destination = Path(path)
    refuse = _Refusal(destination, bucket, name)
    if within is None:
        destination.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(destination.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            yield LocalTarget(fd, destination.name, destination, None, refuse)
        finally:
            os.close(fd)
        return
    root = Path(within)
    try:
        parts = destination.relative_to(root).parts
    except ValueError:
        raise refuse(f"it is not inside {root}") from None
    if not parts or any(part in ("..", ".") for part in parts):
        raise refuse(f"it does not name a file inside {root}")
    root.mkdir(parents=True, exist_ok=True)  # the user's own choice, followed as named
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        real_root = _opened_path(fd)
        follow = 0 if real_root is not None else os.O_NOFOLLOW
        here = root
        for part in parts[:-1]:
            here = here / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | follow, dir_fd=fd)
            except OSError:
                if os.path.islink(here):
                    raise refuse(f"{here} is a symlink") from None
                raise  # a file where a directory must be: not a question of safety
            os.close(fd)
            fd = inner
            if real_root is not None:
                real = _opened_path(fd)
                if real is None or not _inside(real, real_root):
                    raise refuse(f"{here} leads to {real}, outside {real_root}")
        yield LocalTarget(fd, parts[-1], destination, real_root, refuse)
    finally:
        os.close(fd)


# -- local state only the current user controls -------------------------------------------------


def check_private(path: Path, st: os.stat_result, forbidden: int, fix: str, what: str) -> None:
    """Refuse ``path`` (``UnsafeLocalState``) unless the current user owns it and no one else
    has ``forbidden`` access: whoever can write it chooses what natsobj does with it. ``what``
    says what natsobj uses it for."""
    me = os.getuid()
    if st.st_uid != me:
        raise UnsafeLocalState(
            f"{path} belongs to uid {st.st_uid}, not to you (uid {me}); natsobj does not use "
            f"{what} that another user controls",
            hint=fix,
        )
    if st.st_mode & forbidden:
        who = "change" if st.st_mode & OTHERS_WRITE else "read"
        raise UnsafeLocalState(
            f"{path} has mode {stat.S_IMODE(st.st_mode):03o}: users other than you can {who} it",
            hint=fix,
        )


def read_private(path: Path, *, secret: bool, fix: str, what: str) -> bytes | None:
    """``path``'s content (None when absent) once it is proven a regular file of ours that no
    one else can change (nor read, when ``secret``). O_NOFOLLOW: a symlink is refused, never
    followed to what someone else chose. ``what`` as for ``check_private``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        problem = f"{path} cannot be opened safely: {exc.strerror}"
        raise UnsafeLocalState(problem, hint=fix) from None
    with os.fdopen(fd, "rb") as file:
        st = os.fstat(file.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeLocalState(f"{path} is not a regular file", hint=fix)
        check_private(path, st, OTHERS_ANY if secret else OTHERS_WRITE, fix, what)
        return file.read()
