"""How the CLI presents the core's path view (``natsobj.paths``): ``ls`` reads like a directory
listing with sizes, and ``put -r`` / ``get -r`` mirror a local tree."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import click

from natsobj.cli.exits import CliError, ExitCode, exit_code_for, said
from natsobj.errors import NatsObjError, costs_only_its_object
from natsobj.localfiles import local_relative
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


def join_name(prefix: str, relative: str) -> str:
    return as_dir(prefix) + relative


@dataclass
class LocalPlan:
    """Where each object below a prefix goes in a local directory, worked out before anything
    is written: names that share a local path are all left out (choosing one would be a
    silent guess), and so are names with no local path, so one bad name costs only itself."""

    bucket: str
    targets: dict[str, ObjectInfo] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    failures: list[ExitCode] = field(default_factory=list)  # of the objects that failed

    def path(self, root: Path, relative: str) -> Path:
        return root.joinpath(*relative.split(SEP))

    def warn(self) -> None:
        """Say what will be skipped before the transfer starts, one line per problem."""
        for problem in self.problems:
            click.echo(f"natsobj: {problem}", err=True)

    @contextlib.contextmanager
    def one_object(self) -> Iterator[None]:
        """Transfer one object: a failure that is that object's alone (a record or bytes that
        do not verify, a symlink in the destination leading out of it, a writer racing it) is
        said now, counted by ``check``, and the transfer goes on with the next object; a lost
        server or bucket ends it."""
        try:
            yield
        except NatsObjError as error:
            if not costs_only_its_object(error):
                raise
            click.echo(f"natsobj: {said(error)}", err=True)
            self.problems.append(said(error))
            self.failures.append(exit_code_for(error))

    def check(self) -> None:
        """After the rest was transferred: a non-zero exit, so a script notices; the code of
        the failures when they all have one (4 when every one was data that did not verify),
        else 1."""
        if self.problems:
            count = len(self.problems)
            codes = set(self.failures)
            if len(self.failures) < count:  # names the plan left out
                codes.add(ExitCode.FAILED)
            raise CliError(
                f"bucket {self.bucket!r}: {count} problem{'' if count == 1 else 's'} reported "
                "above; those objects were skipped and the rest went ahead",
                codes.pop() if len(codes) == 1 else ExitCode.FAILED,
            )


def plan_local(
    infos: Iterable[ObjectInfo],
    prefix: str,
    bucket: str,
    wanted: Callable[[str], bool] = lambda _: True,
) -> LocalPlan:
    """Map every object below ``prefix`` to its local path (``local_relative``) and find the
    names that collide: on one path, or an object whose path another needs as a directory.
    ``wanted`` filters by local path, as ``sync --include/--exclude`` do."""
    plan = LocalPlan(bucket)
    owners: dict[str, list[ObjectInfo]] = {}
    below = len(as_dir(prefix))
    for info in infos:
        relative_name = info.name[below:]
        try:
            relative = local_relative(relative_name)
        except ValueError as reason:
            if wanted(relative_name):
                plan.problems.append(
                    f"bucket {bucket!r}, object {info.name!r}: skipped, the name does not map "
                    f"to a local path ({reason}); fetch it alone with "
                    f"`natsobj get {bucket} NAME PATH`"
                )
            continue
        if wanted(relative):
            owners.setdefault(relative, []).append(info)
    plan.claimed = set(owners)
    directories = _directories(owners)
    for relative, infos_here in owners.items():
        problem = _collision(bucket, relative, infos_here, directories.get(relative))
        if problem:
            plan.problems.append(problem)
        else:
            plan.targets[relative] = infos_here[0]
    return plan


def _directories(owners: dict[str, list[ObjectInfo]]) -> dict[str, ObjectInfo]:
    """Every local directory the plan needs, with one object that needs it."""
    needed: dict[str, ObjectInfo] = {}
    for relative, infos in owners.items():
        parts = relative.split(SEP)
        for depth in range(1, len(parts)):
            needed.setdefault(SEP.join(parts[:depth]), infos[0])
    return needed


def _collision(
    bucket: str, relative: str, here: list[ObjectInfo], inside: ObjectInfo | None
) -> str | None:
    """Why the objects mapped to ``relative`` cannot be written, or None; ``inside`` is an
    object that needs ``relative`` as a directory."""
    names = " and ".join(repr(i.name) for i in here)
    if len(here) > 1:
        return (
            f"bucket {bucket!r}: objects {names} all map to the local path {relative!r}; "
            "skipped them, fetch each alone with `natsobj get BUCKET NAME PATH`"
        )
    if inside is None:
        return None
    return (
        f"bucket {bucket!r}: object {names} maps to the local file {relative!r}, which object "
        f"{inside.name!r} needs as a directory; skipped {names}, fetch it alone with "
        "`natsobj get BUCKET NAME PATH`"
    )
