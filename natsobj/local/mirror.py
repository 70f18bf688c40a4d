"""A prefix mirrored in a local directory: which objects are below the prefix, where each
goes (``lay_out``), which local files there are, and which file already holds its object.

``natsobj sync`` and the Airflow hook's ``sync_to_local_dir`` both decide through here, so
they agree on what "changed" means: size first (cheap), then the SHA-256 digest the store
recorded, never the modification time alone. A re-run transfers nothing, and a changed file
of the same size is still sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from natsobj.local.files import SEP, local_relative
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


@dataclass(frozen=True)
class Collision:
    """Objects that cannot all be written: ``here`` share the local path ``relative``, or
    ``inside`` (another object) needs ``relative`` as a directory."""

    relative: str
    here: tuple[ObjectInfo, ...]
    inside: ObjectInfo | None


@dataclass
class Layout:
    """Where each object below a prefix goes in a local directory, worked out before anything
    is written. Names that share a local path are all left out (choosing one would be a
    silent guess), and so are names with no local path (``unmapped``, with the reason);
    ``claimed`` holds every local path some wanted object maps to, written or not, so a
    ``--delete`` never removes a file an object still owns."""

    targets: dict[str, ObjectInfo] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)
    unmapped: list[tuple[ObjectInfo, str]] = field(default_factory=list)
    collisions: list[Collision] = field(default_factory=list)

    def path(self, root: Path, relative: str) -> Path:
        return root.joinpath(*relative.split(SEP))


def lay_out(
    infos: Iterable[ObjectInfo], prefix: str, wanted: Callable[[str], bool] = lambda _: True
) -> Layout:
    """Map every object below ``prefix`` to its local path (``local_relative``) and find the
    names that collide: on one path, or an object whose path another needs as a directory.
    ``wanted`` filters by local path, as ``sync --include/--exclude`` do."""
    layout = Layout()
    owners: dict[str, list[ObjectInfo]] = {}
    below = len(as_dir(prefix))
    for info in infos:
        relative_name = info.name[below:]
        try:
            relative = local_relative(relative_name)
        except ValueError as reason:
            if wanted(relative_name):
                layout.unmapped.append((info, str(reason)))
            continue
        if wanted(relative):
            owners.setdefault(relative, []).append(info)
    layout.claimed = set(owners)
    directories = _directories(owners)
    for relative, here in owners.items():
        inside = directories.get(relative)
        if len(here) > 1 or inside is not None:
            layout.collisions.append(Collision(relative, tuple(here), inside))
        else:
            layout.targets[relative] = here[0]
    return layout


def _directories(owners: dict[str, list[ObjectInfo]]) -> dict[str, ObjectInfo]:
    """Every local directory the layout needs, with one object that needs it."""
    needed: dict[str, ObjectInfo] = {}
    for relative, infos in owners.items():
        parts = relative.split(SEP)
        for depth in range(1, len(parts)):
            needed.setdefault(SEP.join(parts[:depth]), infos[0])
    return needed
