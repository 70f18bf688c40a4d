"""A streaming query's offsets are change cursors in Spark's JSON form (natsobj.spark.offsets):
the form lives with Spark, and reads back as the cursor it was written from."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from natsobj.cursors import ChangeCursor
from natsobj.spark.offsets import as_offset, cursor_of


def test_an_offset_round_trips_and_an_old_checkpoints_offset_still_reads() -> None:
    cursor = ChangeCursor(42, datetime(2024, 6, 10, 9, 15, 22, 123456, tzinfo=UTC))
    assert as_offset(cursor) == {"sequence": 42, "created": "2024-06-10T09:15:22.123456Z"}
    assert cursor_of(as_offset(cursor)) == cursor
    assert cursor_of({"sequence": 42}) == ChangeCursor(42)
    for bad in ({"sequence": "forty-two"}, {"sequence": 1, "created": "yesterday"}, "42"):
        with pytest.raises(ValueError, match=r"change cursor|creation time"):
            cursor_of(bad)  # type: ignore[arg-type]
