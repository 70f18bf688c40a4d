"""The checks every field of a meta record goes through before it is used.

A record is untrusted input (anyone who may publish to the bucket writes them), so each field
is checked before it can reach a subject, a size or a comparison; a field that cannot be used
is an ``InvalidField`` naming it, which the record's parser turns into ``BadObjectMeta``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from natsobj.errors import BadObjectMeta
from natsobj.names import decode_name

MAX_COUNT = 2**63 - 1  # JetStream counts bytes and messages in int64: no client writes more
MAX_NUID = 256  # every client writes 22 characters; a long one would not fit a direct get line
# What a single subject token cannot hold: a separator, the wildcards, whitespace, controls
_NOT_IN_TOKEN = re.compile(r"[.*>\s\x00-\x1f\x7f-\x9f]")


class InvalidField(ValueError):
    """One field of a meta record that cannot be used as it is."""

    def __init__(self, field_name: str, problem: str) -> None:
        """``field_name`` "" for a problem of the whole record."""
        super().__init__(f"field {field_name!r} {problem}" if field_name else problem)


def shown_value(value: object) -> str:
    """A value from a record, for an error message: one line, and short however big it is."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_subject_token(value: object) -> bool:
    """Whether ``value`` can stand as exactly one subject token. A nuid names the chunk
    subject ``$O.<bucket>.C.<nuid>`` that a delete or an overwrite purges: '>' or '*' would
    make that purge reach every other object's chunks."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NUID
        and _NOT_IN_TOKEN.search(value) is None
    )


def token_name(token: str) -> str | None:
    """The name a meta subject's token encodes, for errors about a record not parsed."""
    try:
        return decode_name(token)
    except ValueError:
        return None


def nuid_field(value: object) -> str:
    if value is None or value == "":
        return ""  # links and tombstones written by other clients may carry none
    if not is_subject_token(value):
        raise InvalidField("nuid", f"must be one subject token, not {shown_value(value)}")
    return value  # type: ignore[return-value]


def count_field(value: object, field_name: str) -> int:
    """A size, count or offset: a JSON integer (json reads NaN and Infinity as floats, and
    ``true`` is an int to Python, so the type is checked exactly)."""
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise InvalidField(field_name, f"must be a non-negative integer, not {shown_value(value)}")
    return value


def text_field(value: object, field_name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidField(field_name, f"must be a string, not {shown_value(value)}")
    return value


def flag_field(value: object, field_name: str) -> bool:
    if value is None:
        return False
    if type(value) is not bool:
        raise InvalidField(field_name, f"must be true or false, not {shown_value(value)}")
    return value


def name_field(value: object, field_name: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise InvalidField(field_name, f"must be a non-empty string, not {shown_value(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidField(field_name, f"is not valid UTF-8: {shown_value(value)}") from None
    return value


def time_field(value: object, field_name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text_field(value, field_name))
    except ValueError:
        raise InvalidField(field_name, f"is not an ISO 8601 time: {shown_value(value)}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def headers_field(raw: object) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        raise InvalidField("headers", f"must be an object, not {shown_value(raw)}")
    out = {}
    for key, value in raw.items():
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidField(
                "headers", f"{shown_value(key)} must be a string or a list of strings"
            )
        out[key] = list(values)
    return out


def metadata_field(raw: object) -> dict[str, str]:
    # The ADR's example shows a list of single-entry maps; every client writes a map.
    merged: dict[str, str] = {}
    for entry in raw if isinstance(raw, list) else [raw]:
        if not isinstance(entry, dict):
            raise InvalidField(
                "metadata", f"must be an object of strings, not {shown_value(entry)}"
            )
        for key, value in entry.items():
            if not isinstance(value, str):
                raise InvalidField(
                    "metadata", f"{shown_value(key)} must be a string, not {shown_value(value)}"
                )
        merged.update(entry)
    return merged


def trusted_nuid(data: bytes) -> str | None:
    """The nuid a raw meta record names, for the writes that must purge or keep its chunks
    even when the rest of it fails validation: "" when it names none, None when that cannot be
    told safely (not a JSON object, or a nuid that is not one subject token)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    nuid = doc.get("nuid")
    if nuid is None or nuid == "":
        return ""
    return nuid if is_subject_token(nuid) else None


def check_metadata(metadata: dict[str, str] | None, *, bucket: str, name: str) -> dict[str, str]:
    """Metadata to write: strings only. ``json.dumps`` would write a number or a list as is,
    and the Go client (``map[string]string``) then cannot read the record at all."""
    out = dict(metadata or {})
    for key, value in out.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise BadObjectMeta(
                f"metadata {key!r}: {value!r} is not a string key and string value",
                bucket=bucket,
                name=name,
                hint="Metadata keys and values must be strings; convert them with str() first.",
            )
    return out
