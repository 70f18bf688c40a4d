"""How the CLI presents the core's path view (``natsobj.paths``): ``ls`` reads like a directory
listing with sizes, and ``put -r`` / ``get -r`` mirror a local tree."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import click

from natsobj.cli.exits import CliError, ExitCode, exit_code_for, said
from natsobj.errors import NatsObjError, costs_only_its_object
from natsobj.local.mirror import Collision, Layout, lay_out
from natsobj.model import ObjectInfo
from natsobj.paths import as_dir, split_level


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
class LocalPlan(Layout):
    """The core's ``Layout`` of a recursive get or a sync, with the CLI's account of what was
    left out (``problems``, said before the transfer) and of what failed on the way."""

    bucket: str = ""
    problems: list[str] = field(default_factory=list)
    failures: list[ExitCode] = field(default_factory=list)  # of the objects that failed

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
    """The core's ``lay_out`` of the objects below ``prefix``, each name left out said as a
    problem naming what to do instead."""
    layout = lay_out(infos, prefix, wanted)
    plan = LocalPlan(layout.targets, layout.claimed, bucket=bucket)
    for info, reason in layout.unmapped:
        plan.problems.append(
            f"bucket {bucket!r}, object {info.name!r}: skipped, the name does not map "
            f"to a local path ({reason}); fetch it alone with "
            f"`natsobj get {bucket} NAME PATH`"
        )
    plan.problems.extend(_collision(bucket, collision) for collision in layout.collisions)
    return plan


def _collision(bucket: str, collision: Collision) -> str:
    """Why the objects mapped to one local path are not written."""
    names = " and ".join(repr(i.name) for i in collision.here)
    inside = collision.inside
    if inside is None or len(collision.here) > 1:
        return (
            f"bucket {bucket!r}: objects {names} all map to the local path "
            f"{collision.relative!r}; skipped them, fetch each alone with "
            "`natsobj get BUCKET NAME PATH`"
        )
    return (
        f"bucket {bucket!r}: object {names} maps to the local file {collision.relative!r}, "
        f"which object {inside.name!r} needs as a directory; skipped {names}, fetch "
        "it alone with `natsobj get BUCKET NAME PATH`"
    )
