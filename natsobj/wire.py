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
WRONG_LAST_SEQUENCE_CONSTANT = 10164  # the same refusal, without the sequence in its text
MESSAGE_EXCEEDS_MAXIMUM = 10054  # larger than the stream's max_msg_size
# A store error of the stream; its text is the Go error ("maximum bytes exceeded", ...).
STREAM_STORE_FAILED = 10077
# No room on the server (or account) for the storage a stream asks for.
INSUFFICIENT_RESOURCES = 10023
STORAGE_RESOURCES_EXCEEDED = 10047
MEMORY_RESOURCES_EXCEEDED = 10028
# The account's JetStream limits.
ACCOUNT_RESOURCES_EXCEEDED = 10002
MAXIMUM_STREAMS_LIMIT = 10027
STREAM_MAX_BYTES_EXCEEDS_ACCOUNT = 10122
JETSTREAM_NOT_ENABLED = 10076
TOO_MANY_REQUESTS = 10167
# Per-message TTL (ADR-43): a Nats-TTL header sent to a stream without allow_msg_ttl.
MESSAGE_TTL_DISABLED = 10166
# Cluster conditions: the meta layer has no leader/quorum (503), and a stream or consumer
# whose replicas cannot be placed on enough servers.
CLUSTER_NOT_AVAILABLE = 10008
NO_SUITABLE_PEERS = 10005
# Atomic batch publish (ADR-50): the stream does not allow it, the batch has more messages than
# the server's max_batch_size, the stream has too many batches open (429), a batch the server
# no longer holds (a gap, or 10 s without a message).
ATOMIC_PUBLISH_DISABLED = 10174
ATOMIC_BATCH_TOO_LARGE = 10199
ATOMIC_TOO_MANY_INFLIGHT = 10210
ATOMIC_BATCH_INCOMPLETE = 10176

# The API prefix of the account's own JetStream (another domain's or account's is configured).
DEFAULT_API_PREFIX = "$JS.API"


def domain_api_prefix(domain: str) -> str:
    """The API prefix of JetStream in another domain (ADR-19: through a leaf node)."""
    return f"$JS.{domain}.API"


STREAM_NAMES = "STREAM.NAMES"  # the API operation listing streams (paged, filtered by subject)

# What a denied publish stops, as a permission error says it first: whether the subject reads
# or writes its bucket, and the operations that send it. An API subject is matched on its part
# before the stream name (the API prefix varies), first match wins; a store's own subjects
# (its chunks and meta records, under OBJECT_SUBJECT_PREFIX) are written by OBJECT_WRITES.
SUBJECT_ACCESS: tuple[tuple[str, str, str], ...] = (
    ("STREAM.INFO", "read", "opening the bucket, status"),
    ("STREAM.MSG.GET", "read", "get, get_info, list"),
    ("DIRECT.GET", "read", "get, get_info, list"),
    ("CONSUMER", "read", "get, list, watch"),
    ("FC", "read", "get, list, watch"),  # flow-control replies of a push consumer
    ("ACK", "read", "get, list, watch"),
    (STREAM_NAMES, "read", "listing buckets"),
    ("STREAM.LIST", "read", "listing buckets"),
    ("STREAM.CREATE", "write", "create_store"),
    ("STREAM.UPDATE", "write", "update_store"),
    ("STREAM.DELETE", "write", "delete_store"),
    ("STREAM.PURGE", "write", "put, delete, compact"),
    ("STREAM.MSG.DELETE", "write", "put"),
)
OBJECT_WRITES = "put, delete, update_meta"

# ADR-20: bucket ``b`` is stream ``OBJ_b``; its chunks are on ``$O.b.C.<nuid>``, its meta
# records on ``$O.b.M.<encoded name>``.
OBJECT_STREAM_PREFIX = "OBJ_"
OBJECT_SUBJECT_PREFIX = "$O"

# Headers.
STATUS = "Status"
DESCRIPTION = "Description"
ROLLUP = {"Nats-Rollup": "sub"}
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
# Stored only if the stream's last message carries this Nats-Msg-Id (else error 10070).
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
# On a push consumer's idle heartbeat: the last consumer sequence sent, and the flow-control
# subject the server waits on when it stalled.
LAST_CONSUMER_SEQUENCE = "Nats-Last-Consumer"
CONSUMER_STALLED = "Nats-Consumer-Stalled"
MSG_ID = "Nats-Msg-Id"  # the stream drops a second message with the same id (duplicate window)
MSG_SIZE = "Nats-Msg-Size"  # a headers-only delivery's payload size (the payload is not sent)
# ADR-43: a message's time to live (whole seconds, or a Go duration as the server writes
# it), and the reason on the subject delete marker the server leaves when a subject's last
# message expires ("MaxAge").
MSG_TTL = "Nats-TTL"
MARKER_REASON = "Nats-Marker-Reason"
# ADR-50: every message of an atomic batch names the batch and its place in it (from 1); the
# last one commits it ("1"); any other commit value makes the server drop the batch.
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
# What the server adds to a direct get's reply (ADR-31): the message's subject, its sequence in
# the stream and when it was stored.
NATS_SUBJECT = "Nats-Subject"
NATS_SEQUENCE = "Nats-Sequence"
NATS_TIME_STAMP = "Nats-Time-Stamp"


def header_block(headers: dict[str, str]) -> bytes:
    """A NATS header block (``NATS/1.0``, one ``Name: value`` line each, a blank line) for
    headers this package writes itself: names and values without line breaks."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"NATS/1.0\r\n{lines}\r\n".encode()


def chunk_msg_id(put: str, index: int, generation: int = 0) -> str:
    """The message id of chunk ``index`` of the put whose id is ``put``
    (``natsobj.aio.jetstream.nuids.put_id``): a resend after a lost ack is stored once.
    ``generation`` changes when a chunk is deliberately stored again (after its out-of-order copy
    was deleted), which the stream would otherwise drop as a duplicate."""
    return f"{put}.{index}" if not generation else f"{put}.{index}.{generation}"


def meta_msg_id(put: str) -> str:
    """The message id of the meta record that completes the put whose id is ``put``."""
    return f"{put}.meta"


def stream_api(operation: str, stream: str) -> str:
    """``STREAM.<operation>.<stream>``: the API operation, to be put under the API prefix."""
    return f"STREAM.{operation}.{stream}"


def direct_get_subject(api_prefix: str, stream: str, subject: str) -> str:
    """The last-by-subject direct get of ``subject`` (ADR-31)."""
    return f"{api_prefix}.DIRECT.GET.{stream}.{subject}"


def direct_get_batch_subject(api_prefix: str, stream: str) -> str:
    """Where a batched direct get (ADR-31 ``multi_last`` / ``batch`` in the body) is sent."""
    return f"{api_prefix}.DIRECT.GET.{stream}"


def consumer_create_api(stream: str, consumer: str, filter_subjects: tuple[str, ...]) -> str:
    """``CONSUMER.CREATE`` of a named consumer, to be put under the API prefix: with one
    filter subject it is in the request subject, where subject permissions can see it; the
    server takes several only in the request's body (a change feed asked for version events)."""
    if len(filter_subjects) == 1:
        return f"CONSUMER.CREATE.{stream}.{consumer}.{filter_subjects[0]}"
    return f"CONSUMER.CREATE.{stream}.{consumer}"


def consumer_delete_subject(api_prefix: str, stream: str, consumer: str) -> str:
    return f"{api_prefix}.CONSUMER.DELETE.{stream}.{consumer}"


# Never prefixed: across accounts, imports of these carry flow control and acknowledgements.
FLOW_CONTROL = "$JS.FC"
ACKS = "$JS.ACK"


def flow_control_prefix(stream: str, consumer: str) -> str:
    """Where a push consumer's flow-control requests want their answers."""
    return f"{FLOW_CONTROL}.{stream}.{consumer}."


def account_imports() -> str:
    """What an account using another's JetStream through an API prefix must import (ADR-19):
    the words of every hint about a missing import."""
    return (
        f"the using account must import '{DEFAULT_API_PREFIX}.>' (to the API prefix), import"
        f" '{OBJECT_SUBJECT_PREFIX}.>' (to '<API prefix>.{OBJECT_SUBJECT_PREFIX}.>'), import"
        f" '{FLOW_CONTROL}.>' and '{ACKS}.>', import the stream '<inbox prefix>.>', and"
        " connect with that inbox_prefix."
    )


def pull_subject(api_prefix: str, stream: str, consumer: str) -> str:
    return f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"


# The account info request (under the API prefix): answered only by a meta layer with quorum.
ACCOUNT_INFO = "INFO"
