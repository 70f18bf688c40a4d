"""The options of following a bucket's changes, which every watcher takes by the same names.

A watcher resumes from a change cursor; ``on_recreated`` says what it does when that cursor
turns out to belong to an earlier bucket of the same name. Every face reads the option through
its row of ``natsobj.operation_options``, so it means the same everywhere.
"""

from __future__ import annotations

from typing import Literal

from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated

OnRecreated = Literal["fail", "restart"]
"""The option ``on_recreated`` of following changes (``natsobj.operation_options``, the one
vocabulary and default): what a watcher does once ``ChangeCursor.check`` finds its bucket
deleted and created again. ``"fail"`` raises ``BucketRecreated`` so a person decides,
``"restart"`` carries on from the new bucket's beginning. Neither skips an object silently."""


def cursor_after_recreation(exc: BucketRecreated, on_recreated: OnRecreated) -> ChangeCursor:
    """Where a watcher whose cursor ``exc`` refused goes on from: under ``"restart"`` a fresh
    cursor, which the next ``check`` pins to the new bucket at its beginning; under ``"fail"``
    nowhere: ``exc`` is raised again."""
    if on_recreated != "restart":
        raise exc
    return ChangeCursor()
