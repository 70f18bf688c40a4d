"""Small helpers the security tests share: URLs with credentials, timing, leak checks."""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# A refusal must be reported at once, not after the client's reconnect loop gives up.
PROMPT = 2.0


def with_userinfo(url: str, userinfo: str) -> str:
    """``nats://127.0.0.1:4222`` -> ``nats://<userinfo>@127.0.0.1:4222``."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{userinfo}@{rest}"


def as_tls(url: str) -> str:
    return url.replace("nats://", "tls://", 1)


@dataclass
class Stopwatch:
    seconds: float = 0.0


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    watch = Stopwatch()
    start = time.monotonic()
    try:
        yield watch
    finally:
        watch.seconds = time.monotonic() - start


def exception_text(error: BaseException) -> str:
    """Everything a traceback printer, a log handler or a UI would show of an exception:
    message, repr and the whole cause/context chain."""
    return "".join(traceback.format_exception(error)) + repr(error)


def assert_no_secret(text: str, secrets: Iterable[str]) -> None:
    for secret in secrets:
        assert secret not in text, f"secret {secret[:3]}... leaked into: {text[:500]}"
