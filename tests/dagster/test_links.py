"""The IO manager loads for a run with the resource's rights: an input whose object a writer
of the shared bucket replaced with a link into another bucket fails naming the link and its
target, and no step sees the target's bytes (issue 39, the link rule)."""

from __future__ import annotations

import pytest
from dagster import asset, materialize

from natsobj.errors import LinkError

SECRET = b"vault: the master key"


def test_an_input_replaced_by_a_link_into_another_bucket_is_refused(
    io_manager, bucket_store, sync_client, bucket_name
) -> None:
    vault = sync_client.create_store(bucket_name + "vault")
    try:
        vault.put("keys/master", SECRET)

        @asset
        def produced() -> bytes:
            return b"honest bytes"

        @asset
        def consumed(produced: bytes) -> bytes:
            return produced

        assert materialize([produced], resources={"io_manager": io_manager}).success
        bucket_store.delete("pipe/produced")  # a writer of the shared bucket plants a link
        bucket_store.add_link("pipe/produced", vault.get_info("keys/master"))
        result = materialize(
            [produced.to_source_asset(), consumed],
            resources={"io_manager": io_manager},
            raise_on_error=False,
        )
        assert not result.success
        [failure] = [e for e in result.all_events if e.is_step_failure]
        text = str(failure.event_specific_data.error)
        assert LinkError.__name__ in text and f"{vault.bucket}/keys/master" in text, text
        assert SECRET.decode() not in text
        with pytest.raises(LinkError):
            bucket_store.get_bytes("pipe/produced")
    finally:
        sync_client.delete_store(vault.bucket)
