"""The XML bodies S3 answers with, built from plain values (no object of the core leaks out)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from xml.sax.saxutils import escape

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
OWNER_FIELDS = "<ID>natsobj</ID><DisplayName>natsobj</DisplayName>"
"""Every bucket's and object's owner as S3 shows it: the keys of one gateway share one."""
OWNER = f"<Owner>{OWNER_FIELDS}</Owner>"


def iso(when: datetime | None) -> str:
    """S3's timestamp form: ``2025-01-02T03:04:05.000Z``."""
    if when is None:
        return "1970-01-01T00:00:00.000Z"
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def element(tag: str, value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"<{tag}>{escape(text)}</{tag}>"


def document(root: str, parts: Iterable[str], *, namespaced: bool = True) -> bytes:
    xmlns = f' xmlns="{NS}"' if namespaced else ""
    return (DECLARATION + f"<{root}{xmlns}>" + "".join(parts) + f"</{root}>").encode()


def error(code: str, message: str, resource: str, request_id: str) -> bytes:
    return document(
        "Error",
        [
            element("Code", code),
            element("Message", message),
            element("Resource", resource),
            element("RequestId", request_id),
        ],
        namespaced=False,
    )
