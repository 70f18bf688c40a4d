"""Count what ranged reads fetch, in this process: a spy on the core's public
``natsobj.aio.RangeReader.read_range`` (which every ranged read of every face goes through)
that adds up each call's growth of the reader's ``bytes_fetched``. Nothing is replaced: the
real method runs against the real server."""

from __future__ import annotations

import functools
from types import TracebackType
from typing import Any

from natsobj.aio import RangeReader


class FetchCounter:
    """``with FetchCounter() as counted:`` then ``counted.bytes`` (bytes that came from the
    server or the archive for ranged reads) and ``counted.requests`` (ranged reads that
    fetched anything; a read served from chunks already held counts none)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.requests = 0
        self.calls = 0
        self._original: Any = None

    def __enter__(self) -> FetchCounter:
        self._original = original = RangeReader.read_range

        @functools.wraps(original)
        async def counted(reader: RangeReader, *args: Any, **kwargs: Any) -> bytes:
            before = reader.bytes_fetched
            try:
                return await original(reader, *args, **kwargs)
            finally:
                self.calls += 1
                grown = reader.bytes_fetched - before
                self.bytes += grown
                self.requests += grown > 0

        RangeReader.read_range = counted  # type: ignore[method-assign]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        RangeReader.read_range = self._original  # type: ignore[method-assign]
