"""Finding 1 of issue 41 as found: at a 1,024 file-descriptor limit, 1,100 connections that
send half a request and then nothing must neither lock a signed client out nor flood the log."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

from botocore.config import Config

from tests.gateway.conftest import ACCESS_KEY, SECRET
from tests.gateway.processes import GatewayProcess

FLOOD = 1100
SIGNED_WITHIN = 20.0  # seconds a signed request may take while the flood holds its sockets
LOG_BOUND = 64 * 1024


def _half_sent(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each having sent a request line and one header and no more."""
    held = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: flood\r\n")
            held.append(sock)
    return held


def test_a_flood_of_half_sent_connections_locks_no_signed_client_out(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    import boto3

    # one process, as found: the gateway confined to one core (its default worker count)
    with GatewayProcess(
        nats_url,
        tmp_path / "gateway.log",
        "--credentials",
        str(credentials_file),
        nofile=1024,
        one_core=True,
    ) as gateway:
        held = _half_sent(gateway.port, FLOOD)
        try:
            s3 = boto3.client(
                "s3",
                endpoint_url=gateway.endpoint,
                aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=SECRET,
                region_name="us-east-1",
                config=Config(
                    s3={"addressing_style": "path"},
                    retries={"max_attempts": 1},
                    connect_timeout=SIGNED_WITHIN,
                    read_timeout=SIGNED_WITHIN,
                ),
            )
            started = time.monotonic()
            s3.create_bucket(Bucket="flooded")
            s3.put_object(Bucket="flooded", Key="k", Body=b"still served")
            assert s3.get_object(Bucket="flooded", Key="k")["Body"].read() == b"still served"
            assert time.monotonic() - started < SIGNED_WITHIN
        finally:
            for sock in held:
                sock.close()
        assert gateway.terminate() == 0
        log = gateway.log_text()
        assert len(log.encode()) < LOG_BOUND, f"{len(log)} bytes of log: {log[:2000]}"
        assert "closed an idle connection" in log  # the cap was reached, and said so


def _closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the gateway closes ``sock`` (fails past ``seconds``)."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"the gateway kept the connection open past {seconds}s") from None
    return time.monotonic() - started


def test_slow_headers_and_a_stalled_body_are_cut_off(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    with GatewayProcess(
        nats_url,
        tmp_path / "gateway.log",
        "--credentials", str(credentials_file), "--workers", "1",
        "--header-timeout", "1", "--body-timeout", "1",
    ) as gateway:  # fmt: skip
        slow_headers = socket.create_connection(("127.0.0.1", gateway.port))
        slow_headers.sendall(b"GET / HTTP/1.1\r\nHost: slow\r\n")
        stalled_body = socket.create_connection(("127.0.0.1", gateway.port))
        stalled_body.sendall(
            b"PUT /b/k HTTP/1.1\r\nHost: slow\r\nContent-Length: 100\r\n\r\n" + b"x" * 10
        )
        # closed after the timeout, not at once, and long before aiohttp's own idle timer
        assert 0.5 < _closed_within(slow_headers, 10) < 10
        assert _closed_within(stalled_body, 10) < 10
        assert gateway.terminate() == 0


def test_the_log_holds_back_a_flood_of_one_kind_of_line() -> None:
    import logging

    from natsobj.gateway.limits import RateLimitedLog

    limit = RateLimitedLog(burst=5, interval=3600)
    records = [
        logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed: %s", ("x",), None)
        for _ in range(1000)
    ]
    shown = [record for record in records if limit.filter(record)]
    assert len(shown) == 5
    other = logging.LogRecord("natsobj.gateway", logging.ERROR, __file__, 1, "other", (), None)
    assert limit.filter(other)  # another kind of line is not held back by the flood
