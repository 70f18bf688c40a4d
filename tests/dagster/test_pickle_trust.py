"""What another writer of the bucket stores never makes the IO manager unpickle it on its own
say-so, and with a signing key only pickles the key signed are unpickled (issue 21, point 11)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import pickle
from pathlib import Path

import pandas as pd
import pytest
from dagster import asset, materialize

from dagster_natsobj import NatsObjectStoreIOManager

KEY = "a signing key only the pipeline knows"


class Payload:
    """What an attacker stores: unpickling it creates the marker file (any code could run)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _plant(store, marker: Path, **extra_metadata: str) -> None:
    """The attacker's object where the IO manager keeps asset ``upstream``, claiming pickle."""
    store.put(
        "pipe/upstream",
        pickle.dumps(Payload(marker)),
        metadata={"natsobj.type": "object", "natsobj.format": "pickle", **extra_metadata},
    )


def _load_into(consumer, io_manager):
    """Materialize only ``consumer``: its input is loaded from the stored ``upstream``."""

    @asset
    def upstream() -> bytes:
        raise AssertionError("not materialized in these runs")

    return materialize(
        [upstream, consumer],
        selection=[consumer],
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )


def _failure(result) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    return "\n".join(e.message for e in [error, *([error.cause] if error.cause else [])])


def _configured(io_manager: NatsObjectStoreIOManager, **config) -> NatsObjectStoreIOManager:
    fields = {"resource": io_manager.resource, "bucket": io_manager.bucket, "prefix": "pipe"}
    return NatsObjectStoreIOManager(**fields, **config)


def test_annotated_inputs_never_unpickle_what_the_object_claims(io_manager, bucket_store, tmp_path):
    marker = tmp_path / "pwned"
    _plant(bucket_store, marker)

    @asset
    def as_bytes(upstream: bytes) -> int:
        return len(upstream)

    @asset
    def as_frame(upstream: pd.DataFrame) -> int:
        return len(upstream)

    assert _load_into(as_bytes, io_manager).output_for_node("as_bytes") > 0
    assert not _load_into(as_frame, io_manager).success  # not Parquet: fails to parse
    assert not marker.exists()


def test_an_untyped_input_refuses_a_pickle_nothing_vouches_for(io_manager, bucket_store, tmp_path):
    marker = tmp_path / "pwned"
    _plant(bucket_store, marker)

    @asset
    def untyped(upstream) -> None:
        raise AssertionError("must not be reached")

    result = _load_into(untyped, io_manager)
    assert not result.success
    assert not marker.exists()
    message = _failure(result)
    assert f"bucket '{io_manager.bucket}', object 'pipe/upstream'" in message
    assert "does not unpickle because of what a stored object says" in message
    assert "pickle_signing_key" in message


@pytest.mark.parametrize("how", ["config", "environment"])
def test_with_a_key_unsigned_and_forged_pickles_are_refused_and_signed_ones_load(
    io_manager, bucket_store, tmp_path, monkeypatch, how
):
    if how == "config":
        signed = _configured(io_manager, pickle_signing_key=KEY)
    else:
        monkeypatch.setenv("NATSOBJ_PICKLE_KEY", KEY)
        signed = _configured(io_manager)
    marker = tmp_path / "pwned"

    @asset
    def typed(upstream: tuple) -> int:  # the annotation asks for a pickle
        return len(upstream)

    @asset
    def untyped(upstream) -> int:
        return len(upstream)

    _plant(bucket_store, marker)  # unsigned
    for consumer in (typed, untyped):
        result = _load_into(consumer, signed)
        assert not result.success
        assert "carries no signature (natsobj.hmac)" in _failure(result)

    forged = hmac.new(b"the attacker's key", pickle.dumps(Payload(marker)), hashlib.sha256)
    _plant(bucket_store, marker, **{"natsobj.hmac": "hmac-sha256=" + forged.hexdigest()})
    result = _load_into(typed, signed)
    assert not result.success
    message = _failure(result)
    assert "does not match its bytes under this IO manager's key" in message
    assert "object 'pipe/upstream'" in message and KEY not in message
    assert not marker.exists()

    @asset(name="upstream")
    def produce() -> tuple:  # not JSON-native: pickled
        return (1, 2, 3)

    result = materialize([produce, typed, untyped], resources={"io_manager": signed})
    assert result.success
    assert result.output_for_node("typed") == result.output_for_node("untyped") == 3
    recorded = bucket_store.get_info("pipe/upstream").metadata["natsobj.hmac"]
    assert recorded.startswith("hmac-sha256=") and KEY not in recorded
    # The same bytes under the same key: what a signed pickle carries verifies independently.
    expected = hmac.new(KEY.encode(), bucket_store.get_bytes("pipe/upstream"), hashlib.sha256)
    assert recorded == "hmac-sha256=" + base64.urlsafe_b64encode(expected.digest()).decode()


def test_unpickle_untyped_inputs_is_the_explicit_opt_in(io_manager, bucket_store):
    trusting = _configured(io_manager, unpickle_untyped_inputs=True)

    @asset(name="upstream")
    def produce() -> dict:
        return {"a": (1, 2)}  # a tuple inside: pickled, JSON would make it a list

    @asset
    def untyped(upstream) -> dict:
        return upstream

    result = materialize([produce, untyped], resources={"io_manager": trusting})
    assert result.output_for_node("untyped") == {"a": (1, 2)}
    info = bucket_store.get_info("pipe/upstream")
    assert info.metadata["natsobj.format"] == "pickle"
    assert "natsobj.hmac" not in info.metadata
