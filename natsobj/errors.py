"""Typed errors for every failure a pipeline can act on.

Each error names the bucket and the object it concerns and ends with what the user can do,
so a failed Airflow task or Dagster step explains itself without a traceback dive.
"""

from __future__ import annotations

from typing import Any


class NatsObjError(Exception):
    """Base class of every error natsobj raises."""

    hint: str = ""

    def __init__(
        self,
        message: str,
        *,
        bucket: str | None = None,
        name: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.name = name
        if hint is not None:
            self.hint = hint
        parts = [message]
        where = _where(bucket, name)
        if where:
            parts[0] = f"{where}: {message}"
        if self.hint:
            if not parts[0].endswith((".", "!", "?")):
                parts[0] += "."
            parts.append(self.hint)
        super().__init__(" ".join(parts))
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuild without calling ``__init__`` again: ``args`` already holds the full text
        (location and hint), so re-running ``__init__`` on it would prefix and append them a
        second time. Spark and multiprocessing ship errors across processes by pickle."""
        return _rebuild, (type(self), self.args), self.__dict__


def _rebuild(cls: type[NatsObjError], args: tuple[Any, ...]) -> NatsObjError:
    """The error as it was: ``args`` set by ``BaseException.__new__``, the attributes (bucket,
    name, hint, message and any a subclass adds) restored by pickle from the state."""
    return cls.__new__(cls, *args)


def _where(bucket: str | None, name: str | None) -> str:
    if bucket and name is not None:
        return f"bucket {bucket!r}, object {name!r}"
    if bucket:
        return f"bucket {bucket!r}"
    if name is not None:
        return f"object {name!r}"
    return ""


class BucketNotFound(NatsObjError):
    hint = "Create it first (create_store / `natsobj store create`) or check the bucket name."


class BucketExists(NatsObjError):
    hint = "Bind to it with store(), or delete it first."


class ObjectNotFound(NatsObjError):
    hint = "Check the name with list() / `natsobj ls`; deleted objects count as missing."


class ObjectExists(NatsObjError):
    hint = "Choose another name, or delete the existing object first."


class DigestMismatch(NatsObjError):
    hint = "The stored chunks do not match the recorded SHA-256; re-upload the object."


class BadObjectName(NatsObjError):
    hint = "Object names must be non-empty valid UTF-8."


class BadBucketName(NatsObjError):
    hint = "Bucket names may contain only A-Z, a-z, 0-9, '-' and '_'."


class BadObjectMeta(NatsObjError):
    hint = "The meta record in the stream is not valid ObjectInfo JSON; rewrite or delete it."


class LinkError(NatsObjError):
    hint = "Links must point at an existing, non-deleted regular object or at a bucket."


class StoreSealed(NatsObjError):
    hint = "A sealed store is read-only; write to another bucket."


class StoreFull(NatsObjError):
    hint = "The bucket reached max_bytes; delete objects, compact, or raise max_bytes."


class PermissionDenied(NatsObjError):
    hint = "The NATS user lacks permission for this subject; check the account's permissions."


class NotConnected(NatsObjError):
    hint = "Check that the NATS server is running and the URL and credentials are right."


class ClusterUnavailable(NotConnected):
    """The server answers, but the JetStream cluster behind it cannot serve the request: a
    leader election is under way, fewer than a quorum of the replicas are up, or the cluster
    cannot place the replicas asked for. The message says which."""

    hint = (
        "Check that a majority of the cluster's nodes are up and routed to each other; "
        "raise failover_timeout to wait longer for an election."
    )


class ProtocolViolation(NotConnected):
    """The server sent what no NATS server sends: a frame larger than its own max_payload, a
    malformed message, a reply that is not JSON. The connection is not trusted further."""

    hint = (
        "Check that the address is your NATS server (and not another service or an"
        " impostor on its port), and that client and server versions are supported."
    )


class ObjectTooLarge(NatsObjError):
    hint = "Stream it to a file instead of loading it into memory."


class ObjectChanged(NatsObjError):
    hint = "The object was overwritten or deleted while being read; read it again."


class UntrustedArchiveLocation(NatsObjError):
    """An offloaded object's record names an S3 location the reader does not trust: any writer
    of the bucket can publish such a record, so nothing is sent there."""

    hint = (
        "Read-through only uses the archive targets recorded in the bucket's stream metadata "
        "(`natsobj archive run` and `archive offload` record them) or configured in this "
        "process (natsobj.archive.readthrough.trust). If the record is genuine, configure its "
        "target; otherwise delete the object."
    )


class UnsafeLocalState(NotConnected):
    """A data directory, server record or credentials file of the embedded server that another
    local user could have written, or a process natsobj cannot prove is the server of that
    directory. Nothing is sent to it and nothing is signalled."""

    hint = (
        "Use a data directory only you can write: set NATSOBJ_DATA_DIR (or an embedded:///path "
        "URL) to a directory you own with mode 700, or set NATS_URL to a server you trust."
    )


class UnsafeLocalPath(NatsObjError):
    """A file a transfer would write below a local directory (``get -r``, ``sync``, fsspec
    ``get``) whose place leads out of that directory: a symlink planted in it, or a ``..`` in
    the object's name. That object is not written; the rest of the transfer goes on."""

    hint = (
        "Remove the symlink from the destination, or fetch the object alone to a path you "
        "name (`natsobj get BUCKET NAME PATH`)."
    )


class NoServer(NotConnected):
    """Nothing names a NATS server (no URL, no NATS_URL) and no embedded server is running for
    this directory: natsobj starts one only when asked, with the URL ``embedded``."""

    hint = (
        "Name a server with NATS_URL, --url or the url option (nats://HOST:4222); or start the "
        "embedded server for this directory with `natsobj serve` (or give the URL 'embedded', "
        "which starts one in the background)."
    )


class UnknownOption(NatsObjError, ValueError):
    """An option, setting or environment variable natsobj does not know (a typo, most often):
    refused rather than ignored, so it never silently changes which server is used."""


class MissingDigest(DigestMismatch):
    """The meta record carries no SHA-256, so the bytes cannot be verified. Every known client
    (Go, JavaScript, nats-py, natsobj) writes one; a record without it was written by hand or
    by a client that skips verification."""

    hint = (
        "If the object is known to come from a client that writes no digest, read it with "
        "allow_missing_digest=True (`--allow-missing-digest` on the command line; its size and "
        "chunk count are still checked); otherwise "
        "re-upload it."
    )


class UntrustedPickle(NatsObjError):
    """Dagster would have to unpickle an object nothing vouches for: unpickling runs code chosen
    by whoever wrote the bytes, and any writer of the bucket can store an object that says it
    is a pickle. The message says which of the cases it is."""

    hint = (
        "Annotate the input with the type you expect; to load pickles safely, give the IO "
        "manager a pickle_signing_key (or set NATSOBJ_PICKLE_KEY) where they are written and "
        "read, and materialize the upstream asset again so it is signed."
    )


class BadChunkSize(NatsObjError, ValueError):
    """A chunk size a put refuses: each chunk is one message with its own headers and
    subject, so tiny chunks multiply what an object costs the stream."""

    hint = "Choose a larger chunk size, or none: the default (128 KiB) fits the server."


class ChunkTooLarge(BadChunkSize):
    """Each chunk is one NATS message, and the server closes a connection that sends one above
    its max_payload: a chunk size it cannot take is refused before anything is sent."""

    hint = (
        "Choose a smaller chunk size (or none: the default fits the server), or raise "
        "max_payload in the server configuration."
    )


class BucketRecreated(NatsObjError):
    """A change cursor (a sensor's, a trigger's, a streaming query's checkpoint) was taken on a
    bucket that has been deleted and created again under the same name since: its sequence
    counts records of a stream that is gone, so resuming after it would skip, without a word,
    every record of the new bucket up to that number. The message gives the cursor's sequence
    and creation time and the current bucket's."""

    hint = (
        "Decide what the new bucket means to you: to process everything it holds, start over "
        "from its beginning (on_recreated='restart' for the Airflow trigger and the Dagster "
        "sensor, a new checkpoint with startingSequence=earliest for Spark); otherwise reset "
        "the cursor to its end."
    )


class ReplicaLagging(NatsObjError):
    """A read that must reflect every acknowledged write was answered, again and again, by a
    replica of the bucket's stream that had not caught up with its leader. The connection is
    fine; the cluster is slow or a node is behind."""

    hint = "A node of the cluster is lagging; retry, or check the cluster's health."


class SequenceConflict(ObjectChanged):
    """A publish guarded by the sequence its subject was expected to be at found another
    record there: another writer came first. Nothing was written."""

    hint = "Another writer replaced it; read it again and retry."


class BadLifecycleRule(NatsObjError, ValueError):
    """A lifecycle rule that cannot be used: a glob that is none (``[]``) or a TTL no put
    could give (below a second, past ``natsobj.lifecycle.MAX_TTL``, not a number). Given
    here it is refused; read from a bucket, only the puts it matches are refused."""

    hint = (
        "Set the rules again: natsobj store lifecycle BUCKET --set GLOB=DURATION ... (or --clear)."
    )


class ExpiryNotEnabled(NatsObjError):
    """A put with a TTL (or under a lifecycle rule) on a bucket whose stream does not allow
    per-message TTLs (``allow_msg_ttl``), or on a server older than 2.11, which has none."""

    hint = (
        "Turn per-object expiry on with update_store(bucket, allow_msg_ttl=True) /"
        " `natsobj store update BUCKET --allow-msg-ttl true` (needs nats-server 2.11 or later;"
        " it cannot be turned off again)."
    )


def costs_only_its_object(error: NatsObjError) -> bool:
    """Whether a failure belongs to one object (its record, its bytes, its local path, a race
    with its writer) rather than to the connection or the bucket. A call over many objects
    (get -r, sync, a lifecycle restamp) reports such a failure and goes on with the rest, so
    one bad record never costs another object; a lost server or bucket ends the call."""
    return not isinstance(error, (NotConnected, BucketNotFound))
