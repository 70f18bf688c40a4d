"""Errors only Dagster raises, and how Dagster says what a core error's hint names.

A hint names an operation or option by its core name (``natsobj.hints``); in Dagster those
are settings of the IO manager or the sensor factory, so a failed step or tick says where
to set them.
"""

from __future__ import annotations

from natsobj.errors import NatsObjError
from natsobj.hints import Operation, Option, Ref, python_words

# Core option -> where a Dagster user sets it.
_SET_ON = {
    "allow_missing_digest": "NatsObjectStoreIOManager",
    "on_recreated": "make_nats_object_sensor",
    "url": "NatsObjectStoreResource",
}


def dagster_words(ref: Ref) -> str | None:
    """Dagster's words for ``ref``; None where they are the core's."""
    if isinstance(ref, Option) and ref.name in _SET_ON:
        return f"{python_words(ref)} on {_SET_ON[ref.name]}"
    if isinstance(ref, Operation) and ref.name == "create_store":
        return f"{python_words(Option('create_bucket', True))} on NatsObjectStoreIOManager"
    return None


class UntrustedPickle(NatsObjError):
    """The IO manager would have to unpickle an object nothing vouches for: unpickling runs
    code chosen by whoever wrote the bytes, and any writer of the bucket can store an object
    that says it is a pickle. The message says which of the cases it is."""

    hint = (
        "Annotate the input with the type you expect; to load pickles safely, give the IO "
        "manager a pickle_signing_key (or set NATSOBJ_PICKLE_KEY) where they are written and "
        "read, and materialize the upstream asset again so it is signed."
    )


class TooDeep(NatsObjError, ValueError):
    """A value nested deeper than Python's pickle recurses: neither JSON nor pickle stores it
    (or loads it back), so the output or input fails with this, not a bare RecursionError."""

    hint = "Flatten the value, or store it in a format of its own (Parquet, a file) instead."


class VersionNotPinnable(NatsObjError):
    """An input asked for a pinned version (``version_id`` metadata or ``pin_materialized``)
    that cannot be given as asked: the upstream materialization recorded no version of this
    object, or the stored format has no versions to read. Loading the current version instead
    would break the promise of the pin, so the load fails; the message says which case."""

    hint = (
        "Materialize the upstream asset again with NatsObjectStoreIOManager (its materialization "
        "then records version_id), or drop the pin to load the current version."
    )
