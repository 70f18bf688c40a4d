"""A prefix mirrored in a local directory: which objects are below the prefix, which local
files there are, and which file already holds its object.

``natsobj sync`` and the Airflow hook's ``sync_to_local_dir`` both decide through here, so
they agree on what "changed" means: size first (cheap), then the SHA-256 digest the store
recorded, never the modification time alone. A re-run transfers nothing, and a changed file
of the same size is still sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from natsobj.model import ObjectInfo, format_digest
from natsobj.paths import as_dir, under


def local_files(root: Path) -> Iterator[tuple[Path, str]]:
    """Every regular file below ``root`` with its '/'-joined relative path, in stable order."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.relative_to(root).as_posix()


def objects_below(infos: Iterable[ObjectInfo], prefix: str) -> dict[str, ObjectInfo]:
    """The objects below the directory ``prefix`` by their name relative to it; links are
    left alone (their target is another object, mirrored where it lives)."""
    below = len(as_dir(prefix))
    return {
        info.name[below:]: info
        for info in under(infos, prefix)
        if info.link is None and info.name[below:]
    }


def file_digest(path: Path) -> str:
    """A local file's SHA-256 in the form the store records (``ObjectInfo.digest``)."""
    with path.open("rb") as handle:
        return format_digest(hashlib.file_digest(handle, "sha256").digest())


def up_to_date(path: Path, info: ObjectInfo) -> bool:
    """Whether ``path`` is a regular file holding the object's bytes: same size, then same
    digest (read only when the sizes agree)."""
    return path.is_file() and path.stat().st_size == info.size and file_digest(path) == info.digest
