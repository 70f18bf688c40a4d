"""Larger socket reads, with fewer copies, for the NATS connection.

nats-py's read loop asks its stream for 32 KiB at a time, and the stream stops reading the
socket once 64 KiB wait in it. A 128 KiB chunk then takes four or more passes of the read
loop and the protocol parser, each appending to and slicing from their buffers: for large
objects that per-read cost is a large part of what the event loop spends. Reading up to
``READ_BYTES`` per pass (whatever has arrived; a read never waits for more) makes the number
of passes follow what has arrived instead of a fixed 32 KiB, and costs nothing for small
messages (docs/performance.md).

Each byte of a large message was also copied six times on the event loop: into the stream's
buffer, twice out of it (``StreamReader.read`` slices a bytearray, then makes bytes of the
slice), into the parser's buffer, and twice out of that for the payload. The read here takes
the stream's whole buffer instead of copying out of it, and the parser's buffer makes each
payload with one copy (``PayloadBuffer``): three copies where there were six.

Underneath, asyncio received each read into a fresh 256 KiB ``bytes`` and shrank it to what
arrived. For small messages glibc could then hand the freed top of the heap back to the
kernel and take it again on the next read (two ``brk`` calls per message, depending on the
heap's layout: docs/performance.md). The socket is read instead into one buffer the
connection keeps (``ReceiveBuffer``, an asyncio ``BufferedProtocol`` in front of the stream's
own protocol), so a read allocates nothing.

Because the read is ours, so is the check nats-py's parser lacks: it buffers whatever size a
message's control line announces. A frame larger than both the server's own ``max_payload``
(from its INFO, plus room for the headers a server adds) and the largest reply the JetStream
API sends (a page of subject state, which max_payload does not bound), or one whose header
block is announced larger than the whole message, closes the connection (``frame_violation``)
before more of it is read: a broken or hostile server cannot make the client hold more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, SupportsIndex, overload

from nats.aio.transport import TcpTransport
from nats.errors import ProtocolError
from nats.protocol.parser import AWAITING_MSG_PAYLOAD

from natsobj.aio.jetstream.nats_internals import internals_present

READ_BYTES = 1024 * 1024
RECEIVE_BYTES = 256 * 1024  # one socket read at most (asyncio's own limit per read)
# Beyond max_payload, what a server may add to a stored message it delivers (a direct get's
# Nats-Stream, Nats-Subject, Nats-Sequence and Nats-Time-Stamp headers, for one).
HEADER_ROOM = 64 * 1024
# The largest reply the JetStream API itself may send, which max_payload does not bound: a
# STREAM.INFO page lists up to 100,000 subjects (nats-server's JSMaxSubjectDetails), each at
# most a control line long (4 KiB, max_control_line's default), with its count.
API_REPLY_CEILING = 100_000 * (4096 + 32)
# The internals the read below uses, of nats-py (connection, transport) and of asyncio's
# StreamReader; without any of them the connection keeps nats-py's own read.
CONNECTION_INTERNALS = ("_ps", "_transport")
TRANSPORT_INTERNALS = ("_io_reader",)
STREAM_INTERNALS = (
    "_limit",
    "_buffer",
    "_eof",
    "_exception",
    "_wait_for_data",
    "_maybe_resume_transport",
    "_transport",
)
# What frame_violation reads of nats-py's parser.
PARSER_INTERNALS = ("buf", "state", "needed", "header_needed")


class PayloadBuffer(bytearray):
    """nats-py's parser buffer. The parser cuts each payload out as ``bytes(buf[a:b])``: a
    bytearray slice, then bytes of it. Here the slice is already bytes, made straight from the
    buffer (``bytes()`` of bytes is the same object), so the payload is copied once."""

    __slots__ = ()

    @overload
    def __getitem__(self, key: SupportsIndex) -> int: ...
    @overload
    def __getitem__(self, key: slice) -> bytes: ...  # type: ignore[override]

    def __getitem__(self, key: SupportsIndex | slice) -> int | bytes:
        if type(key) is not slice:
            return super().__getitem__(key)
        # both views released before the parser deletes what it consumed
        with memoryview(self) as whole, whole[key] as part:
            return bytes(part)


class ReceiveBuffer(asyncio.BufferedProtocol):
    """The socket's reads land in one buffer kept for the connection's life and are handed to
    the stream's own protocol (``asyncio.StreamReaderProtocol``), which appends them to the
    stream as before; everything else goes to that protocol unchanged."""

    def __init__(self, protocol: asyncio.StreamReaderProtocol) -> None:
        self.protocol = protocol
        self._view = memoryview(bytearray(RECEIVE_BYTES))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        # the stream copies it out (StreamReader.feed_data extends a bytearray: any buffer)
        self.protocol.data_received(self._view[:nbytes])  # type: ignore[arg-type]

    def eof_received(self) -> bool | None:
        return self.protocol.eof_received()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.protocol.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        self.protocol.pause_writing()

    def resume_writing(self) -> None:
        self.protocol.resume_writing()


def receive_into_one_buffer(stream: asyncio.StreamReader) -> None:
    """Put a ``ReceiveBuffer`` in front of the stream's protocol, once per stream (each
    reconnect makes a new one); a transport or protocol of another kind is left alone."""
    transport = stream._transport  # type: ignore[attr-defined]
    if not isinstance(transport, asyncio.Transport):
        return
    protocol = transport.get_protocol()
    if type(protocol) is asyncio.StreamReaderProtocol:
        transport.set_protocol(ReceiveBuffer(protocol))


def frame_violation(parser: Any, max_payload: object) -> str | None:
    """What is wrong with the message the parser is reading, or None: a size larger than the
    server's ``max_payload`` allows, or a header block announced larger than the message."""
    if parser.state != AWAITING_MSG_PAYLOAD:
        return None
    if parser.header_needed > parser.needed:
        return (
            f"sent a malformed message (a {parser.header_needed}-byte header block in a"
            f" {parser.needed}-byte message)"
        )
    limit = max((max_payload if type(max_payload) is int else 0) + HEADER_ROOM, API_REPLY_CEILING)
    if parser.needed > limit:
        return (
            f"announced a {parser.needed}-byte message, more than its own max_payload"
            f" ({max_payload}) or any JetStream reply ({API_REPLY_CEILING}) allows"
        )
    return None


def enlarge_reads(nc: Any, on_violation: Callable[[str], None] | None = None) -> None:
    """Make ``nc``'s read loop take up to ``READ_BYTES`` per pass, and hand the parser what
    arrived without copying it out of the stream first. The transport object outlives
    reconnects (each makes a new stream, which gets the larger limit on its first read; the
    parser's reset makes a plain buffer, replaced on the next read). WebSocket transports
    already read whole frames and are left alone.

    Each read first checks the message being parsed (``frame_violation``): a bad one is
    told to ``on_violation`` and raised as nats-py's ProtocolError, on which nats-py closes
    the connection, drops what its parser holds and reconnects."""
    if not internals_present("socket reads", nc, CONNECTION_INTERNALS):
        return
    transport = nc._transport
    if type(transport) is not TcpTransport or not _patchable(nc, transport):
        return

    seen: asyncio.StreamReader | None = None

    async def read_more(_size: int) -> bytes | bytearray:
        nonlocal seen
        stream = transport._io_reader
        if stream is None:
            raise ConnectionResetError("nats: the connection's stream is gone")
        if stream is not seen:  # the first read, or the first after a reconnect
            seen = stream
            # how much may wait in the stream before it pauses the socket
            stream._limit = max(stream._limit, READ_BYTES)
            receive_into_one_buffer(stream)
        parser = nc._ps
        violation = frame_violation(parser, nc._max_payload)
        if violation is not None:
            if on_violation is not None:
                on_violation(violation)
            raise ProtocolError(violation)
        if type(parser.buf) is bytearray:
            parser.buf = PayloadBuffer(parser.buf)
        # StreamReader.read, taking the whole buffer rather than copying it out (twice)
        if stream._exception is not None:
            raise stream._exception
        if not stream._buffer and not stream._eof:
            await stream._wait_for_data("read")
        data = stream._buffer
        stream._buffer = bytearray()
        stream._maybe_resume_transport()
        return data

    transport.read = read_more  # type: ignore[method-assign]


def _patchable(nc: Any, transport: TcpTransport) -> bool:
    """Whether the transport, its current stream and the parser have what ``read_more``
    uses (a reconnect's new stream is of the same class as this one)."""
    return (
        internals_present("socket reads", transport, TRANSPORT_INTERNALS)
        and internals_present("socket reads", transport._io_reader, STREAM_INTERNALS)
        and internals_present("socket reads", nc._ps, PARSER_INTERNALS)
        and internals_present("socket reads", nc, ("_max_payload",))
    )
