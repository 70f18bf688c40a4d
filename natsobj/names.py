"""Validation and encoding of bucket and object names, exactly as ADR-20 and the Go client do."""

from __future__ import annotations

import base64
import binascii
import re

from natsobj.errors import BadBucketName, BadObjectName
from natsobj.wire import OBJECT_STREAM_PREFIX, OBJECT_SUBJECT_PREFIX

_BUCKET_RE = re.compile(r"[A-Za-z0-9_-]+")
# nats-server's default max_control_line: a protocol line (PUB, HPUB) longer than this closes
# the connection. Its INFO does not say when it is configured otherwise.
MAX_CONTROL_LINE = 4096
# The rest of a request's HPUB line: the verb, header and total sizes, spaces and CRLF
# (the reply inbox is counted from its prefix: ``<inbox prefix>.<nuid>.<token>``)
_LINE_OVERHEAD = 64


def is_bucket_name(value: str) -> bool:
    # fullmatch: ``$`` would let a trailing newline through
    return _BUCKET_RE.fullmatch(value) is not None


def check_bucket(bucket: str) -> str:
    """Reject a bad bucket name before anything is sent, so the server never sees it."""
    if not isinstance(bucket, str) or not is_bucket_name(bucket):
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


def check_subjects_fit(subjects: list[str], *, inbox_prefix: str, bucket: str, name: str) -> None:
    """Refuse (BadObjectName) a name whose subjects would make a protocol line the server
    rejects: it answers "maximum control line exceeded" by closing the connection, and a
    client of its own does not come back. Checked before anything is sent."""
    longest = max(len(subject.encode("utf-8")) for subject in subjects)
    allowed = _subject_bytes_allowed(inbox_prefix)
    if longest > allowed:
        room = max(0, allowed - (longest - len(encode_name(name)))) // 4 * 3
        raise BadObjectName(
            f"name is {len(name.encode('utf-8'))} bytes: its subjects would be {longest} bytes,"
            f" over what fits in the server's {MAX_CONTROL_LINE}-byte protocol line",
            bucket=bucket,
            name=name[:80] + "..." if len(name) > 80 else name,
            hint=f"Use a name of at most about {room} bytes in this bucket.",
        )


def names_that_always_fit(subjects_without_token: list[str], *, inbox_prefix: str) -> int:
    """How many characters a name may have and fit ``check_subjects_fit`` whatever they are
    (``subjects_without_token``: the name's subjects with an empty name token): a name that
    short needs no subjects built to be checked, which every put and get would pay for."""
    longest = max(len(subject.encode("utf-8")) for subject in subjects_without_token)
    room = _subject_bytes_allowed(inbox_prefix) - longest
    # a character is at most 4 UTF-8 bytes; n bytes take 4 * ceil(n / 3) in base64
    return max(0, (room // 4 * 3) // 4)


def _subject_bytes_allowed(inbox_prefix: str) -> int:
    return MAX_CONTROL_LINE - _LINE_OVERHEAD - len(inbox_prefix.encode("utf-8")) - 48


def encode_name(name: str) -> str:
    """Padded URL-safe base64, the token every NATS client uses in the meta subject."""
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii")


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def is_token_of(name: str, token: str) -> bool:
    """Whether ``token`` is ``name``'s meta subject token: a record read from a subject must
    be that name's, or a delete or an overwrite of it would write to another object. (binascii
    directly, comparing bytes without decoding them: listings check every record.)"""
    encoded = binascii.b2a_base64(name.encode("utf-8"), newline=False).translate(_URLSAFE)
    return encoded == token.encode("utf-8", "surrogateescape")


def decode_name(token: str) -> str:
    """The name behind a meta subject's last token (``encode_name`` reversed); raises
    ``binascii.Error`` or ``UnicodeDecodeError`` for a token no client would write."""
    return base64.urlsafe_b64decode(token).decode("utf-8")


def stream_name(bucket: str) -> str:
    return f"{OBJECT_STREAM_PREFIX}{bucket}"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{nuid}"


def meta_subject(bucket: str, name: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.M.{encode_name(name)}"


def all_chunks_subject(bucket: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.>"


# The tokens under the chunk subjects that hold kept versions' records and versions' locks
# (natsobj.versioning): never a nuid, whose tokens are 22 characters long
VERSIONS_TOKEN = "V"
LOCKS_TOKEN = "L"


def version_subject(bucket: str, name: str, version_id: str) -> str:
    """Where the record of a kept version of ``name`` is (``natsobj.versioning``)."""
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{VERSIONS_TOKEN}.{encode_name(name)}.{version_id}"


def lock_subject(bucket: str, name: str, version_id: str) -> str:
    """Where the lock of a version of ``name`` is (``natsobj.versioning.VersionLock``)."""
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{LOCKS_TOKEN}.{encode_name(name)}.{version_id}"


def all_versions_subject(bucket: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{VERSIONS_TOKEN}.>"


def all_locks_subject(bucket: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{LOCKS_TOKEN}.>"


def is_version_subject(bucket: str, subject: str) -> bool:
    """Whether a subject under the chunk subjects holds a kept version's record, not chunks."""
    return subject.startswith(f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{VERSIONS_TOKEN}.")


def is_lock_subject(bucket: str, subject: str) -> bool:
    """Whether a subject under the chunk subjects holds a version's lock, not chunks."""
    return subject.startswith(f"{OBJECT_SUBJECT_PREFIX}.{bucket}.C.{LOCKS_TOKEN}.")


def all_meta_subject(bucket: str) -> str:
    return f"{OBJECT_SUBJECT_PREFIX}.{bucket}.M.>"
