"""The JetStream API's error table: an error reply (its ``err_code``, or for servers that send
none its description) or a denied publish, as the typed error a user can act on."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from natsobj.docs import doc_url
from natsobj.errors import (
    BucketExists,
    BucketNotFound,
    ChunkTooLarge,
    ClusterUnavailable,
    ExpiryNotEnabled,
    NatsObjError,
    NotConnected,
    ObjectChanged,
    ObjectNotFound,
    PermissionDenied,
    StoreFull,
    StoreSealed,
)
from natsobj.retry import RetryableError
from natsobj.wire import (
    ACCOUNT_RESOURCES_EXCEEDED,
    CLUSTER_NOT_AVAILABLE,
    INSUFFICIENT_RESOURCES,
    JETSTREAM_NOT_ENABLED,
    JETSTREAM_NOT_ENABLED_FOR_ACCOUNT,
    MAXIMUM_STREAMS_LIMIT,
    MEMORY_RESOURCES_EXCEEDED,
    MESSAGE_EXCEEDS_MAXIMUM,
    MESSAGE_TTL_DISABLED,
    NO_MESSAGE_FOUND,
    NO_SUITABLE_PEERS,
    OBJECT_STREAM_PREFIX,
    OBJECT_SUBJECT_PREFIX,
    OBJECT_WRITES,
    STORAGE_RESOURCES_EXCEEDED,
    STREAM_MAX_BYTES_EXCEEDS_ACCOUNT,
    STREAM_NAME_IN_USE,
    STREAM_NOT_FOUND,
    STREAM_SEALED,
    STREAM_STORE_FAILED,
    SUBJECT_ACCESS,
    TOO_MANY_REQUESTS,
    WRONG_LAST_SEQUENCE,
    WRONG_LAST_SEQUENCE_CONSTANT,
)

_BUCKET_IN_SUBJECT = re.compile(r"(?:\bOBJ_|\$O\.)([A-Za-z0-9_-]+)")


# A typed error from the reply's description, bucket and object name.
_ErrorFactory = Callable[[str, str | None, str | None], NatsObjError]


def _bucket_not_found(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return BucketNotFound("bucket does not exist", bucket=bucket)


def _object_not_found(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ObjectNotFound("object does not exist", bucket=bucket, name=name)


def _bucket_exists(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return BucketExists(f"bucket exists with a different configuration ({text})", bucket=bucket)


def _sealed(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return StoreSealed("store is sealed", bucket=bucket, name=name)


def _wrong_last_sequence(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ObjectChanged(
        f"another writer changed it first ({text})",
        bucket=bucket,
        name=name,
        hint="Nothing was written; read it again and retry.",
    )


def _message_too_large(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ChunkTooLarge(
        f"a chunk is larger than the bucket's stream accepts ({text})",
        bucket=bucket,
        name=name,
        hint="Put it with a smaller chunk size, or raise the stream's max_msg_size.",
    )


def _store_failed(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    # The code only says the stream's store refused the message; the Go error in the text says
    # why, and its limit errors (max bytes, messages, messages per subject) read "maximum ...".
    if text.lower().startswith("maximum"):
        return StoreFull(f"store is full ({text})", bucket=bucket, name=name)
    return NatsObjError(f"the server could not store it ({text})", bucket=bucket, name=name)


def _server_full(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return StoreFull(
        f"the server has no room for it ({text})",
        bucket=bucket,
        name=name,
        hint="Lower max_bytes, free space, or raise the server's JetStream max_file_store /"
        " max_memory_store.",
    )


def _account_limit(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return StoreFull(
        f"the account's JetStream limits refuse it ({text})",
        bucket=bucket,
        name=name,
        hint="Delete buckets the account no longer needs, lower max_bytes, or raise the"
        " account's JetStream limits.",
    )


def _no_jetstream(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return NotConnected(
        "this account has no JetStream",
        bucket=bucket,
        hint="Enable JetStream for the account, or set the domain / API prefix of the"
        " JetStream you mean to use.",
    )


def _no_meta_leader(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ClusterUnavailable(
        "the JetStream cluster has no meta leader (no quorum of servers)", bucket=bucket
    )


def _no_suitable_peers(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ClusterUnavailable(
        f"the cluster cannot place the replicas ({text})",
        bucket=bucket,
        hint="A replicated store needs at least as many running, routed servers as"
        " replicas (and ones matching its placement tags); start more nodes or lower"
        " replicas.",
    )


def _retry(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return RetryableError(text, bucket=bucket, name=name)


def _ttl_disabled(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return ExpiryNotEnabled(
        "the bucket does not allow per-object TTLs (its stream has no allow_msg_ttl)",
        bucket=bucket,
        name=name,
    )


def _denied(text: str, bucket: str | None, name: str | None) -> NatsObjError:
    return PermissionDenied(text, bucket=bucket, name=name)


# The JetStream API error codes (nats-server's errors.json) natsobj gives a typed error.
_BY_CODE: dict[int, _ErrorFactory] = {
    STREAM_NOT_FOUND: _bucket_not_found,
    NO_MESSAGE_FOUND: _object_not_found,
    STREAM_NAME_IN_USE: _bucket_exists,
    STREAM_SEALED: _sealed,
    WRONG_LAST_SEQUENCE: _wrong_last_sequence,
    WRONG_LAST_SEQUENCE_CONSTANT: _wrong_last_sequence,
    MESSAGE_EXCEEDS_MAXIMUM: _message_too_large,
    STREAM_STORE_FAILED: _store_failed,
    INSUFFICIENT_RESOURCES: _server_full,
    STORAGE_RESOURCES_EXCEEDED: _server_full,
    MEMORY_RESOURCES_EXCEEDED: _server_full,
    ACCOUNT_RESOURCES_EXCEEDED: _account_limit,
    MAXIMUM_STREAMS_LIMIT: _account_limit,
    STREAM_MAX_BYTES_EXCEEDS_ACCOUNT: _account_limit,
    JETSTREAM_NOT_ENABLED_FOR_ACCOUNT: _no_jetstream,
    JETSTREAM_NOT_ENABLED: _no_jetstream,
    CLUSTER_NOT_AVAILABLE: _no_meta_leader,
    NO_SUITABLE_PEERS: _no_suitable_peers,
    TOO_MANY_REQUESTS: _retry,
    MESSAGE_TTL_DISABLED: _ttl_disabled,
}
# Only for a reply without ``err_code`` (servers before 2.2): the description's words, first
# match wins.
_BY_TEXT: tuple[tuple[str, _ErrorFactory], ...] = (
    ("no suitable peers", _no_suitable_peers),
    ("stream not found", _bucket_not_found),
    ("no message found", _object_not_found),
    ("stream name already in use", _bucket_exists),
    ("sealed", _sealed),
    ("maximum bytes", _store_failed),
    ("maximum messages", _store_failed),
    ("insufficient resources", _server_full),
    ("too many", _retry),
    ("not enabled for account", _no_jetstream),
    ("permission", _denied),
)


def api_error(
    error: dict[str, Any], *, bucket: str | None = None, name: str | None = None
) -> NatsObjError:
    """Map a JetStream API error to the typed error a user can act on: by its ``err_code``,
    which is stable across server versions and languages, never by words a server may
    reword; by the description only when the server sent no code."""
    code = int(error.get("code") or 0)
    err_code = int(error.get("err_code") or 0)
    text = str(error.get("description") or "JetStream error")
    factory = _BY_CODE.get(err_code) if err_code else _by_text(text)
    if factory is not None:
        return factory(text, bucket, name)
    if code == 429:
        return RetryableError(text, bucket=bucket, name=name)
    if code in (401, 403):
        return PermissionDenied(text, bucket=bucket, name=name)
    return NatsObjError(f"JetStream error {code}/{err_code}: {text}", bucket=bucket, name=name)


def _by_text(text: str) -> _ErrorFactory | None:
    low = text.lower()
    return next((factory for words, factory in _BY_TEXT if words in low), None)


def publish_denied(subject: str) -> PermissionDenied:
    """The error for a denied publish in the user's words first (the bucket, read or write,
    the operations refused), then the subject NATS named."""
    found = _BUCKET_IN_SUBJECT.search(subject)
    bucket = found.group(1) if found else None
    said = f"NATS: not allowed to publish to {subject!r}"
    before_stream = f".{subject.split('.' + OBJECT_STREAM_PREFIX)[0]}."
    access = (
        ("write", OBJECT_WRITES)
        if subject.startswith(f"{OBJECT_SUBJECT_PREFIX}.")
        else next(
            ((kind, ops) for part, kind, ops in SUBJECT_ACCESS if f".{part}." in before_stream),
            None,
        )
    )
    if access is None:
        return PermissionDenied(said, bucket=bucket)
    kind, operations = access
    scope = "" if bucket else " to the account's buckets"
    return PermissionDenied(
        f"no {kind} access{scope} ({operations}): {said}",
        bucket=bucket,
        hint="Grant the NATS user publish rights on that subject: "
        f"{doc_url('security', 'authorization-the-minimal-permission-set-for-one-bucket')}"
        " lists what reading and writing one bucket need.",
    )
