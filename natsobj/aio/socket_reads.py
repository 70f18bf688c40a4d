"""Larger socket reads for the NATS connection.

nats-py's read loop asks its stream for 32 KiB at a time, and the stream stops reading the
socket once 64 KiB wait in it. A 128 KiB chunk then takes four or more passes of the read
loop and the protocol parser, each appending to and slicing from their buffers: for large
objects that per-read cost is a large part of what the event loop spends. Reading up to
``READ_BYTES`` per pass (whatever has arrived; a read never waits for more) cuts the passes
by about ten and costs nothing for small messages. Measured in BENCHMARKS.md.
"""

from __future__ import annotations

from typing import Any

from nats.aio.transport import TcpTransport

READ_BYTES = 1024 * 1024


def enlarge_reads(nc: Any) -> None:
    """Make ``nc``'s read loop take up to ``READ_BYTES`` per pass. The transport object
    outlives reconnects (each makes a new stream, which gets the larger limit on its first
    read). WebSocket transports already read whole frames and are left alone."""
    transport = getattr(nc, "_transport", None)
    if type(transport) is not TcpTransport:
        return
    read = transport.read

    async def read_more(_size: int) -> bytes:
        stream = transport._io_reader
        if stream is not None and stream._limit < READ_BYTES:
            stream._limit = READ_BYTES  # how much may wait in the stream before it pauses
        return await read(READ_BYTES)

    transport.read = read_more  # type: ignore[method-assign]
