"""The XML bodies S3 answers with, built from plain values (no object of the core leaks out),
and the XML bodies it is sent (DeleteObjects, CompleteMultipartUpload), read bounded and parsed
without a document type: no entity is ever declared, so none is expanded or fetched."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from datetime import datetime
from typing import NoReturn
from xml.parsers import expat
from xml.sax.saxutils import escape

from aiohttp import web

from natsobj.gateway.s3errors import S3Error

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
CONTENT_TYPE = "application/xml"
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


async def read_body(request: web.Request, limit: int) -> bytes:
    """A request's XML body, refused (``MaxMessageLengthExceeded``) once it passes ``limit``
    bytes, whatever length it declared: the gateway never holds more than that of it."""
    too_big = S3Error("MaxMessageLengthExceeded", f"Your request was too big (over {limit} bytes).")
    if request.content_length is not None and request.content_length > limit:
        raise too_big
    pieces: list[bytes] = []
    size = 0
    async for piece in request.content.iter_any():
        size += len(piece)
        if size > limit:
            raise too_big
        pieces.append(piece)
    return b"".join(pieces)


class _Declaration(Exception):
    """A document type or entity declaration met while checking a body."""


def _refuse(*_: object) -> NoReturn:
    raise _Declaration


def parse(body: bytes) -> ElementTree.Element:
    """The root element of a request's XML body; ``MalformedXML`` for one that is not
    well-formed or that has a document type (S3's documents have none; refusing it is what
    keeps entity expansion, the "billion laughs", and external entities out)."""
    checker = expat.ParserCreate()
    checker.StartDoctypeDeclHandler = _refuse
    checker.EntityDeclHandler = _refuse
    try:
        checker.Parse(body, True)
        return ElementTree.fromstring(body)
    except _Declaration:
        raise S3Error("MalformedXML", "A document type declaration is not allowed") from None
    except (expat.ExpatError, ElementTree.ParseError):
        raise S3Error("MalformedXML", "The XML you provided was not well-formed") from None
