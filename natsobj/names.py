"""Validation and encoding of bucket and object names, exactly as ADR-20 and the Go client do."""

from __future__ import annotations

import base64
import re

from natsobj.errors import BadBucketName, BadObjectName

_BUCKET_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def check_bucket(bucket: str) -> str:
    """Reject a bad bucket name before anything is sent, so the server never sees it."""
    if not isinstance(bucket, str) or not _BUCKET_RE.match(bucket):
        raise BadBucketName(f"invalid bucket name {bucket!r}")
    return bucket


def check_object_name(name: str, *, bucket: str | None = None) -> str:
    if not isinstance(name, str) or name == "":
        raise BadObjectName("object name is empty or not a string", bucket=bucket, name=name)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates
        raise BadObjectName("object name is not valid UTF-8", bucket=bucket, name=name) from exc
    return name


def encode_name(name: str) -> str:
    """Padded URL-safe base64, the token every NATS client uses in the meta subject."""
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii")


def decode_name(token: str) -> str:
    """The name behind a meta subject's last token (``encode_name`` reversed); raises
    ``binascii.Error`` or ``UnicodeDecodeError`` for a token no client would write."""
    return base64.urlsafe_b64decode(token).decode("utf-8")


def stream_name(bucket: str) -> str:
    return f"OBJ_{bucket}"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{encode_name(name)}"


def all_chunks_subject(bucket: str) -> str:
    return f"$O.{bucket}.C.>"


def all_meta_subject(bucket: str) -> str:
    return f"$O.{bucket}.M.>"
