"""Which HTTP server the S3 gateway stands on: the candidates measured on the work a gateway does.

Each candidate serves the same three routes in a process of its own, and one client (aiohttp's,
the same for every candidate) drives it over loopback:

* ``PUT /sink``: a large body streamed in, read piece by piece and dropped (an upload);
* ``GET /source?size=N``: N bytes streamed out in 1 MiB pieces (a download);
* ``GET /small``: a few bytes back (a HEAD/list/small GET storm), many clients at once.

Run: ``python -m benchmarks.gateway_server [--mib 512] [--requests 5000] [--clients 32]``.
The figures and the decision are in docs/gateway.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator

PIECE = 1 << 20
SMALL = b"0123456789abcdef"


def _aiohttp_app() -> object:
    from aiohttp import web

    async def sink(request: web.Request) -> web.Response:
        total = 0
        async for piece in request.content.iter_any():
            total += len(piece)
        return web.Response(text=str(total))

    async def source(request: web.Request) -> web.StreamResponse:
        size = int(request.query["size"])
        response = web.StreamResponse(headers={"Content-Length": str(size)})
        await response.prepare(request)
        piece = bytes(PIECE)
        while size > 0:
            await response.write(piece[: min(size, PIECE)])
            size -= PIECE
        await response.write_eof()
        return response

    async def small(request: web.Request) -> web.Response:
        return web.Response(body=SMALL)

    app = web.Application(client_max_size=1 << 40)
    app.add_routes([web.put("/sink", sink), web.get("/source", source), web.get("/small", small)])
    return app


def _starlette_app() -> object:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def sink(request: Request) -> Response:
        total = 0
        async for piece in request.stream():
            total += len(piece)
        return Response(str(total))

    async def source(request: Request) -> StreamingResponse:
        size = int(request.query_params["size"])

        async def pieces() -> AsyncIterator[bytes]:
            left = size
            piece = bytes(PIECE)
            while left > 0:
                yield piece[: min(left, PIECE)]
                left -= PIECE

        return StreamingResponse(pieces(), headers={"Content-Length": str(size)})

    async def small(request: Request) -> Response:
        return Response(SMALL)

    return Starlette(
        routes=[
            Route("/sink", sink, methods=["PUT"]),
            Route("/source", source),
            Route("/small", small),
        ]
    )


def serve(kind: str, port: int) -> None:
    """Run one candidate in this process until it is killed."""
    if kind == "aiohttp":
        from aiohttp import web

        web.run_app(_aiohttp_app(), host="127.0.0.1", port=port, print=None)  # type: ignore[arg-type]
    else:
        import uvicorn

        loop = "uvloop" if kind.endswith("uvloop") else "asyncio"
        uvicorn.run(
            _starlette_app(),  # type: ignore[arg-type]
            host="127.0.0.1",
            port=port,
            log_level="warning",
            loop=loop,
            http="httptools",
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_up(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
        else:
            writer.close()
            return


async def measure(port: int, mib: int, requests: int, clients: int) -> dict[str, float]:
    import aiohttp

    base = f"http://127.0.0.1:{port}"
    size = mib * PIECE
    figures: dict[str, float] = {}
    async with aiohttp.ClientSession() as session:

        async def body() -> AsyncIterator[bytes]:
            piece = bytes(PIECE)
            for _ in range(mib):
                yield piece

        start = time.perf_counter()
        async with session.put(f"{base}/sink", data=body()) as response:
            assert int(await response.text()) == size
        figures["put_mib_s"] = mib / (time.perf_counter() - start)

        start = time.perf_counter()
        got = 0
        async with session.get(f"{base}/source", params={"size": str(size)}) as response:
            async for piece in response.content.iter_chunked(PIECE):
                got += len(piece)
        assert got == size
        figures["get_mib_s"] = mib / (time.perf_counter() - start)

        latencies: list[float] = []
        queue = iter(range(requests))

        async def worker() -> None:
            for _ in queue:
                began = time.perf_counter()
                async with session.get(f"{base}/small") as response:
                    assert await response.read() == SMALL
                latencies.append(time.perf_counter() - began)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        figures["small_req_s"] = requests / (time.perf_counter() - start)
        figures["small_p50_ms"] = statistics.median(latencies) * 1000
        figures["small_p99_ms"] = statistics.quantiles(latencies, n=100)[98] * 1000
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--candidates", default="aiohttp,uvicorn-starlette,uvicorn-starlette-uvloop"
    )
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    for kind in args.candidates.split(","):
        port = _free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.gateway_server",
                "--serve",
                kind,
                "--port",
                str(port),
            ]
        )
        try:
            asyncio.run(_wait_up(port))
            figures = asyncio.run(measure(port, args.mib, args.requests, args.clients))
        finally:
            os.kill(server.pid, signal.SIGTERM)
            server.wait()
        print(kind, " ".join(f"{key}={value:.1f}" for key, value in figures.items()), flush=True)


if __name__ == "__main__":
    main()
