"""JetStream wire constants in one place: API error codes, headers and API subjects.

Errors are matched on these codes first; text matching is kept only as a fallback for servers
that omit ``err_code``.
"""

from __future__ import annotations

# JetStream API error codes (``err_code`` in an API error reply).
STREAM_NOT_FOUND = 10059
NO_MESSAGE_FOUND = 10037
STREAM_NAME_IN_USE = 10058
JETSTREAM_NOT_ENABLED_FOR_ACCOUNT = 10039
WRONG_LAST_SEQUENCE = 10071
STREAM_SEALED = 10109

# Headers.
STATUS = "Status"
DESCRIPTION = "Description"
ROLLUP = {"Nats-Rollup": "sub"}
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"


def stream_api(operation: str, stream: str) -> str:
    """``STREAM.<operation>.<stream>``: the API operation, to be put under the API prefix."""
    return f"STREAM.{operation}.{stream}"


def direct_get_subject(api_prefix: str, stream: str, subject: str) -> str:
    """The last-by-subject direct get of ``subject`` (ADR-31)."""
    return f"{api_prefix}.DIRECT.GET.{stream}.{subject}"


def direct_get_batch_subject(api_prefix: str, stream: str) -> str:
    """Where a batched direct get (ADR-31 ``multi_last`` / ``batch`` in the body) is sent."""
    return f"{api_prefix}.DIRECT.GET.{stream}"


def pull_subject(api_prefix: str, stream: str, consumer: str) -> str:
    return f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"


def consumer_delete_subject(api_prefix: str, stream: str, consumer: str) -> str:
    return f"{api_prefix}.CONSUMER.DELETE.{stream}.{consumer}"
