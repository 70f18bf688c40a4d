"""Object names seen as paths: '/'-separated prefixes behave like directories.

The store itself is flat; this is only how the CLI presents and maps names, so ``ls`` reads
like a directory listing and ``put -r`` / ``get -r`` mirror a local tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from natsobj.cli.exits import CliError
from natsobj.model import ObjectInfo

SEP = "/"


def as_dir(prefix: str | None) -> str:
    """'reports', 'reports/' and 'reports//' all mean the directory 'reports/'."""
    if not prefix or prefix.strip(SEP) in ("", "."):
        return ""
    return prefix.rstrip(SEP) + SEP


def under(infos: Iterable[ObjectInfo], prefix: str | None) -> list[ObjectInfo]:
    directory = as_dir(prefix)
    return [i for i in infos if i.name.startswith(directory)]


@dataclass
class Directory:
    """A collapsed prefix in a listing, summarising the objects beneath it."""

    name: str
    objects: int = 0
    size: int = 0
    mtime: datetime | None = None

    def add(self, info: ObjectInfo) -> None:
        self.objects += 1
        self.size += info.size
        if info.mtime and (self.mtime is None or info.mtime > self.mtime):
            self.mtime = info.mtime

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "objects": self.objects,
            "size": self.size,
            "mtime": self.mtime.isoformat() if self.mtime else None,
        }


def one_level(
    infos: Iterable[ObjectInfo], prefix: str | None
) -> tuple[list[Directory], list[ObjectInfo]]:
    """Split a listing into the sub-directories and the objects directly inside ``prefix``."""
    directory = as_dir(prefix)
    dirs: dict[str, Directory] = {}
    objects: list[ObjectInfo] = []
    for info in under(infos, directory):
        rest = info.name[len(directory) :]
        head, sep, _ = rest.partition(SEP)
        if sep and head:
            name = directory + head + SEP
            dirs.setdefault(name, Directory(name)).add(info)
        else:
            objects.append(info)
    return sorted(dirs.values(), key=lambda d: d.name), sorted(objects, key=lambda i: i.name)


def local_files(root: Path) -> Iterator[tuple[Path, str]]:
    """Every regular file below ``root`` with its '/'-joined relative path, in stable order."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.relative_to(root).as_posix()


def join_name(prefix: str, relative: str) -> str:
    return as_dir(prefix) + relative


def local_target(root: Path, info: ObjectInfo, prefix: str) -> Path:
    """Where ``get -r`` writes an object; names that would escape ``root`` are refused."""
    relative = PurePosixPath(info.name[len(as_dir(prefix)) :])
    parts = [p for p in relative.parts if p not in ("", SEP)]
    if not parts or any(p in (".", "..") for p in parts) or relative.is_absolute():
        raise CliError(
            f"bucket {info.bucket!r}, object {info.name!r}: the name does not map to a path "
            f"inside {root}; fetch it alone with `natsobj get {info.bucket} NAME PATH`"
        )
    return root.joinpath(*parts)
