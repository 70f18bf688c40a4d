"""The options of following a bucket's changes, which every watcher takes by the same names.

A watcher resumes from a change cursor; these say what it does when that cursor turns out to
belong to an earlier bucket of the same name. Every face that follows changes takes them as
they are here, so they mean the same everywhere.
"""

from __future__ import annotations

from typing import Literal

from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated

OnRecreated = Literal["fail", "restart"]
"""The option ``on_recreated`` of following changes: what a watcher does once
``ChangeCursor.check`` finds its bucket deleted and created again. ``"fail"`` raises
``BucketRecreated`` so a person decides, ``"restart"`` carries on from the new bucket's
beginning. Neither skips an object silently."""
ON_RECREATED: tuple[OnRecreated, ...] = ("fail", "restart")
DEFAULT_ON_RECREATED: OnRecreated = "fail"


def check_on_recreated(value: str, *, where: str = "") -> OnRecreated:
    """``value`` as an ``OnRecreated``, or a ValueError (after ``where``, e.g. ``"sensor 'x': "``)
    naming the choices: a typo fails where the watcher is defined, not at the first bucket
    recreated under it, which may be months later."""
    if value not in ON_RECREATED:
        raise ValueError(f"{where}on_recreated must be one of {ON_RECREATED}, not {value!r}")
    return value


def cursor_after_recreation(exc: BucketRecreated, on_recreated: OnRecreated) -> ChangeCursor:
    """Where a watcher whose cursor ``exc`` refused goes on from: under ``"restart"`` a fresh
    cursor, which the next ``check`` pins to the new bucket at its beginning; under ``"fail"``
    nowhere: ``exc`` is raised again."""
    if on_recreated != "restart":
        raise exc
    return ChangeCursor()
