"""The gateway's access log (``--access-log``): one JSON object a line per request, for an
operator's tools to parse.

Each line holds what an operator asks of a request and nothing a client could use against
another: the time, the client's address, the S3 operation, bucket and key, the status, the
body bytes in and out, the duration, the request id and the access key id. Never a secret, a
signature, a header or a query string (a presigned URL's query holds its signature). Bucket
and key are the client's words: JSON escapes them, so a key with a newline is still one line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import IO

STDOUT = "-"


@dataclass(frozen=True)
class Entry:
    remote: str | None
    method: str
    operation: str
    bucket: str | None
    key: str | None
    status: int
    received: int
    sent: int
    seconds: float
    request_id: str | None
    access_key: str | None

    def line(self) -> str:
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
            "remote": self.remote,
            "method": self.method,
            "operation": self.operation,
            "bucket": self.bucket,
            "key": self.key,
            "status": self.status,
            "bytes_in": self.received,
            "bytes_out": self.sent,
            "duration_ms": round(self.seconds * 1000, 3),
            "request_id": self.request_id,
            "access_key_id": self.access_key,
        }
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class AccessLog:
    """Appends entries to a file (``O_APPEND``: the workers of one gateway may share it, each
    line one write) or to stdout (``-``)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._stream: IO[str] | None = None

    def _open(self) -> IO[str]:
        if self._stream is None:
            if self.target == STDOUT:
                self._stream = sys.stdout
            else:
                fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
                self._stream = os.fdopen(fd, "a", buffering=1, encoding="utf-8")
        return self._stream

    def write(self, entry: Entry) -> None:
        stream = self._open()
        stream.write(entry.line())
        stream.flush()

    def close(self) -> None:
        if self._stream is not None and self._stream is not sys.stdout:
            self._stream.close()
        self._stream = None
