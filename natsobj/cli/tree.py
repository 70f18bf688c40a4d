"""How the CLI presents the core's path view (``natsobj.paths``): ``ls`` reads like a directory
listing with sizes, and ``put -r`` / ``get -r`` mirror a local tree."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from natsobj.cli.exits import CliError
from natsobj.model import ObjectInfo
from natsobj.paths import SEP, as_dir, split_level


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
    """Split a listing into the sub-directories (with totals) and the objects directly inside."""
    below, objects = split_level(infos, prefix)
    dirs = []
    for name, members in sorted(below.items()):
        directory = Directory(name)
        for info in members:
            directory.add(info)
        dirs.append(directory)
    return dirs, sorted(objects, key=lambda i: i.name)


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
