"""The IO manager refuses to load an object whose record has no digest unless its
``allow_missing_digest`` field is set (issue 21, point 9)."""

from __future__ import annotations

from dagster import asset, materialize

from dagster_natsobj import NatsObjectStoreIOManager
from tests.security.test_missing_digest_faces import CONTENT, refusal, strip_digest


def _load(io_manager) -> tuple[bool, str, list]:
    loaded: list[bytes] = []

    @asset
    def upstream() -> bytes:
        raise AssertionError("not materialized in these runs")

    @asset
    def consumer(upstream: bytes) -> None:
        loaded.append(upstream)

    result = materialize(
        [upstream, consumer],
        selection=[consumer],
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )
    failures = [e for e in result.all_events if e.is_step_failure]
    text = "\n".join(str(f.step_failure_data.error) for f in failures)
    return result.success, text, loaded


def test_io_manager_refuses_a_record_without_digest_unless_allowed(
    nats_resource, sync_client, raw, bucket_name
) -> None:
    store = sync_client.create_store(bucket_name)
    store.put("pipe/upstream", CONTENT)
    strip_digest(raw, bucket_name, "pipe/upstream")
    config = {"resource": nats_resource, "bucket": bucket_name, "prefix": "pipe"}

    success, failure, loaded = _load(NatsObjectStoreIOManager(**config))
    assert not success and loaded == []
    assert refusal(bucket_name, "pipe/upstream") in failure, failure
    # the hint in Dagster's words: where the option is set (issue 29)
    assert "allow_missing_digest=True on NatsObjectStoreIOManager" in failure, failure

    success, failure, loaded = _load(NatsObjectStoreIOManager(**config, allow_missing_digest=True))
    assert success, failure
    assert loaded == [CONTENT]
