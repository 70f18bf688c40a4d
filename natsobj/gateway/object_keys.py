"""What an S3 key may be, for every place one arrives (the request path, the source of a copy):
percent-decoded strictly, so a key that is not UTF-8 is refused rather than looked up as some
other key with U+FFFD in its place; no control character, which a listing's XML could not
carry; at most S3's 1,024 bytes. Each refusal is S3's own answer."""

from __future__ import annotations

import re
from urllib.parse import unquote

from natsobj.gateway.s3errors import S3Error

MAX_KEY_BYTES = 1024  # S3's longest key
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def decoded(encoded: str, bucket: str | None) -> str:
    """``encoded`` percent-decoded as UTF-8; InvalidURI (400, as S3 answers) when it is not,
    escaped or raw (a header's bytes that are not UTF-8 arrive as surrogate escapes)."""
    try:
        key = unquote(encoded, errors="strict")
        key.encode()
    except UnicodeError:
        raise _unparsable(bucket) from None
    return key


def check(key: str, bucket: str | None) -> None:
    """InvalidURI for a control character, KeyTooLongError past 1,024 bytes."""
    if _CONTROL.search(key):
        raise _unparsable(bucket)
    if len(key.encode()) > MAX_KEY_BYTES:
        raise S3Error("KeyTooLongError", "Your key is too long", bucket=bucket)


def _unparsable(bucket: str | None) -> S3Error:
    return S3Error("InvalidURI", "Couldn't parse the specified URI.", bucket=bucket)
