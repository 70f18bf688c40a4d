"""Typed errors for every failure a pipeline can act on.

Each error names the bucket and the object it concerns and ends with what the user can do,
so a failed task or step explains itself without a traceback dive. What to do is a ``Hint``
where it names an operation or an option: said here in the Python API's words, and by each
face that surfaces the error in its own (``said_in``, ``natsobj.hints``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from natsobj.hints import Hint, Operation, Option, Spelling, spell

P = ParamSpec("P")
R = TypeVar("R")


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
        super().__init__(_composed(message, bucket, name, self.hint))
        self.message = message

    def said_in(self, spelling: Spelling) -> str:
        """The error's text with its hint in a face's words (a face rewords the errors it
        surfaces with ``in_words_of`` or ``reword``)."""
        return _composed(self.message, self.bucket, self.name, spell(self.hint, spelling))

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuild without calling ``__init__`` again: ``args`` already holds the full text
        (location and hint), so re-running ``__init__`` on it would prefix and append them a
        second time. Spark and multiprocessing ship errors across processes by pickle."""
        return _rebuild, (type(self), self.args), self.__dict__


def _rebuild(cls: type[NatsObjError], args: tuple[Any, ...]) -> NatsObjError:
    """The error as it was: ``args`` set by ``BaseException.__new__``, the attributes (bucket,
    name, hint, message and any a subclass adds) restored by pickle from the state."""
    return cls.__new__(cls, *args)


def _composed(message: str, bucket: str | None, name: str | None, hint: str) -> str:
    """Where, what, and what to do, as one text."""
    where = _where(bucket, name)
    text = f"{where}: {message}" if where else message
    if not hint:
        return text
    if not text.endswith((".", "!", "?")):
        text += "."
    return f"{text} {hint}"


def _where(bucket: str | None, name: str | None) -> str:
    if bucket and name is not None:
        return f"bucket {bucket!r}, object {name!r}"
    if bucket:
        return f"bucket {bucket!r}"
    if name is not None:
        return f"object {name!r}"
    return ""


def reword(error: NatsObjError, spelling: Spelling) -> NatsObjError:
    """``error``, its message now ending with its hint in a face's words. The error keeps its
    type, attributes and traceback: only what ``str(error)`` says changes."""
    error.args = (error.said_in(spelling),)
    return error


def in_words_of(spelling: Spelling) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator for a face's entry point (an operator's ``execute``, a Spark reader's
    ``read``): every natsobj error leaving it is reworded in the face's words. Generator
    functions are wrapped so that errors raised while they are iterated are reworded too."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.isgeneratorfunction(function):

            @functools.wraps(function)
            def generator(*args: P.args, **kwargs: P.kwargs) -> Iterator[Any]:
                try:
                    return (yield from function(*args, **kwargs))
                except NatsObjError as exc:
                    reword(exc, spelling)
                    raise

            return generator  # type: ignore[return-value]

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except NatsObjError as exc:
                reword(exc, spelling)
                raise

        return call

    return decorate


class BucketNotFound(NatsObjError):
    hint = Hint(
        "Create it first ({}) or check the bucket name.", Operation("create_store", ("bucket",))
    )


class BucketExists(NatsObjError):
    hint = "Bind to it with store(), or delete it first."


class ObjectNotFound(NatsObjError):
    hint = Hint("Check the name with {}; deleted objects count as missing.", Operation("list"))


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


class ObjectLocked(NatsObjError):
    """A version under retention or a legal hold (``natsobj.versioning.VersionLock``): it
    cannot be removed or changed, nor its lock shortened, until the lock allows it."""

    hint = (
        "Wait until its retain-until date or lift its legal hold; a governance-mode retention"
        " may be bypassed by a caller allowed to (bypass_governance=True)."
    )


class StoreFull(NatsObjError):
    hint = "The bucket reached max_bytes; delete objects, compact, or raise max_bytes."


class NoRoom(StoreFull):
    """A put whose size is known that cannot fit what is left of the bucket's max_bytes:
    refused before any byte is sent, where the server would refuse it only once the room was
    used up. ``size``, ``room`` and ``max_bytes`` are in bytes."""

    hint = Hint(
        "Delete objects, compact, or raise the bucket's max_bytes ({}).",
        Operation("update_store", ("bucket",), (Option("max_bytes"),)),
    )

    size: int = 0
    room: int = 0
    max_bytes: int = -1

    @classmethod
    def of(cls, *, bucket: str, name: str, size: int, room: int, max_bytes: int) -> NoRoom:
        error = cls(
            f"a put of {size} bytes does not fit: {max(room, 0)} bytes left of max_bytes"
            f" {max_bytes}; nothing was sent",
            bucket=bucket,
            name=name,
        )
        error.size, error.room, error.max_bytes = size, room, max_bytes
        return error


class PermissionDenied(NatsObjError):
    hint = "The NATS user lacks permission for this subject; check the account's permissions."


class MissingExtra(NatsObjError, ImportError):
    """A face's libraries are not installed: says which extra brings them, where a bare
    ``ModuleNotFoundError`` would name only a library the user never asked for. An
    ``ImportError``, so code that treats a face as optional still catches it; ``module`` is
    the library found missing (``name`` stays the object name of every natsobj error)."""

    extra: str | None = None
    module: str | None = None

    @classmethod
    def of(cls, face: str, extra: str, module: str) -> MissingExtra:
        """The error for ``face`` missing ``module``, which ``extra`` brings (the constructor
        stays every natsobj error's, which pickling across processes relies on)."""
        error = cls(
            f"{face} needs the {extra} extra: {cls.install_line(extra)}"
            f" (no module named {module!r})"
        )
        error.extra = extra
        error.module = module
        return error

    @staticmethod
    def install_line(extra: str) -> str:
        """What to type to get ``extra``."""
        return f"pip install 'natsobj[{extra}]'"


class NotConnected(NatsObjError):
    hint = "Check that the NATS server is running and the URL and credentials are right."


class ClusterUnavailable(NotConnected):
    """The server answers, but the JetStream cluster behind it cannot serve the request: a
    leader election is under way, fewer than a quorum of the replicas are up, or the cluster
    cannot place the replicas asked for. The message says which."""

    hint = Hint(
        "Check that a majority of the cluster's nodes are up and routed to each other; "
        "raise {} to wait longer for an election.",
        Option("failover_timeout"),
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


class PrefixChanged(NatsObjError):
    """Objects under a prefix were deleted while a sensor waited for the prefix to be quiet,
    and the sensor was told not to accept deletes (``allow_delete=False``)."""

    hint = (
        "Objects were deleted under a prefix expected only to grow; pass allow_delete=True "
        "to count a delete as activity instead."
    )


class UntrustedArchiveLocation(NatsObjError):
    """An offloaded object's record names an S3 location the reader does not trust: any writer
    of the bucket can publish such a record, so nothing is sent there."""

    hint = Hint(
        "Read-through only uses the archive targets recorded in the bucket's stream metadata "
        "({} and {} record them) or configured in this process "
        "(natsobj.archive.readthrough.trust). If the record is genuine, configure its target; "
        "otherwise delete the object.",
        Operation("Archiver.run"),
        Operation("offload"),
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

    hint = Hint(
        "Remove the symlink from the destination, or fetch the object alone to a path you "
        "name ({}).",
        Operation("get_file", ("name", "path")),
    )


class NoServer(NotConnected):
    """Nothing names a NATS server (no URL, no NATS_URL) and no embedded server is running for
    this directory: natsobj starts one only when asked, with the URL ``embedded``."""

    hint = Hint(
        "Name a server with NATS_URL or {}; or start the embedded server for this directory "
        "with {} (or give the URL 'embedded', which starts one in the background).",
        Option("url", "nats://HOST:4222"),
        Operation("serve"),
    )


class UnknownOption(NatsObjError, ValueError):
    """An option, setting or environment variable natsobj does not know (a typo, most often):
    refused rather than ignored, so it never silently changes which server is used."""


class GatewayNotConfigured(NatsObjError, NotImplementedError):
    """A presigned URL was asked for (the presign command, the filesystem's ``sign``) but no S3
    gateway endpoint, or no access key and secret for it, is configured: NATS itself has no
    HTTP URLs. A ``NotImplementedError`` too, which is what fsspec's ``sign`` raises for a
    filesystem that cannot sign."""

    hint = (
        "Set the S3 gateway's endpoint, access key and secret: the settings gateway_url,"
        " gateway_access_key and gateway_secret (NATSOBJ_GATEWAY_URL,"
        " NATSOBJ_GATEWAY_ACCESS_KEY, NATSOBJ_GATEWAY_SECRET in the environment); a gateway in"
        " front of the embedded server prints the lines that set them."
    )


class MissingDigest(DigestMismatch):
    """The meta record carries no SHA-256, so the bytes cannot be verified. Every known client
    (Go, JavaScript, nats-py, natsobj) writes one; a record without it was written by hand or
    by a client that skips verification."""

    hint = Hint(
        "If the object is known to come from a client that writes no digest, read it with "
        "{} (its size and chunk count are still checked); otherwise re-upload it.",
        Option("allow_missing_digest", True),
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
    """A change cursor (a watcher's, a streaming query's checkpoint) was taken on a
    bucket that has been deleted and created again under the same name since: its sequence
    counts records of a stream that is gone, so resuming after it would skip, without a word,
    every record of the new bucket up to that number. The message gives the cursor's sequence
    and creation time and the current bucket's."""

    hint: str = Hint(
        "Decide what the new bucket means to you: to process everything it holds, start over "
        "from its beginning ({}); otherwise reset the cursor to its end.",
        Option("on_recreated", "restart"),
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

    hint = Hint(
        "Set the rules again, each a glob and a TTL ({}).",
        Operation("set_lifecycle_rules", ("rules",)),
    )


class ExpiryNotEnabled(NatsObjError):
    """A put with a TTL (or under a lifecycle rule) on a bucket whose stream does not allow
    per-message TTLs (``allow_msg_ttl``), or on a server older than 2.11, which has none."""

    hint = Hint(
        "Turn per-object expiry on with {} (needs nats-server 2.11 or later; it cannot be "
        "turned off again).",
        Operation("update_store", ("bucket",), (Option("allow_msg_ttl", True),)),
    )


def costs_only_its_object(error: NatsObjError) -> bool:
    """Whether a failure belongs to one object (its record, its bytes, its local path, a race
    with its writer) rather than to the connection or the bucket. A call over many objects
    (get -r, sync, a lifecycle restamp) reports such a failure and goes on with the rest, so
    one bad record never costs another object; a lost server or bucket ends the call."""
    return not isinstance(error, (NotConnected, BucketNotFound))
