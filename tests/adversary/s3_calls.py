"""A request to the S3 gateway under the adversary's invariants, for every row that makes one
(``operations``' S3 rows, ``version_rows``' versionId rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError, IncompleteReadError, ResponseStreamingError

from tests.adversary.world import CALL_BOUND, World

# What an S3 client may see fail: an S3 error answer, or a body cut short (the gateway aborts
# the connection when a read fails after the answer's head went out).
S3_ERRORS: tuple[type[BaseException], ...] = (
    ClientError,
    IncompleteReadError,
    ResponseStreamingError,
)


def s3_call(
    world: World, label: str, fn: Callable[[], Any], bound: float = CALL_BOUND
) -> tuple[bool, Any]:
    """A gateway request under the invariants; an S3 error answer may not carry B's bytes."""
    ok, result = world.call_blocking(label, fn, bound=bound, allowed=S3_ERRORS)
    if not ok:
        world.check_bytes(label, repr(getattr(result, "response", result)).encode())
    return ok, result
