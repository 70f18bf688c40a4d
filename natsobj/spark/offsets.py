"""A streaming query's offsets: change cursors in the JSON form Spark keeps in its checkpoint.

``{"sequence": n, "created": t}`` means "every meta record up to stream sequence n of the
bucket created at t has been planned"; an offset of an older checkpoint has no ``created``.
"""

from __future__ import annotations

from typing import Any

from natsobj.cursors import ChangeCursor, cursor_sequence, cursor_time


def as_offset(cursor: ChangeCursor) -> dict[str, Any]:
    """``cursor`` as the offset Spark writes to the checkpoint."""
    return {"sequence": cursor.sequence, "created": str(cursor).partition("@")[2]}


def cursor_of(offset: dict[str, Any]) -> ChangeCursor:
    """The cursor an offset of a checkpoint stands for (a ValueError for one that is none)."""
    if not isinstance(offset, dict):
        raise ValueError(f"{offset!r} is not a change cursor")
    return ChangeCursor(
        cursor_sequence(offset.get("sequence", 0)), cursor_time(offset.get("created"))
    )
