"""A writer of the Pipes bucket cannot speak for either side of a session (issue 39, findings 9
and 10): the job refuses a context it did not get from the injector, and Dagster's reader
takes only the messages the job sealed, in order, reporting any other chunk and reading on.

The bad objects are published with the plain blocking client, as any writer of the bucket
could; the job's side is the real ``natsobj.pipes`` writer channel fed the session's params.
"""

from __future__ import annotations

import io
import json

import pytest
from dagster import asset, materialize, open_pipes_session
from dagster_pipes import DagsterPipesError

from dagster_natsobj import PipesNatsContextInjector, PipesNatsMessageReader
from natsobj.pipes import (
    KEY_PARAM,
    KEY_PREFIX_PARAM,
    SECRET_PARAM,
    PipesNatsContextLoader,
    PipesNatsMessageWriterChannel,
    PipesObjectForged,
    chunk_name,
)

EVIL_EXTRAS = {"target": "vault/keys/master"}


def message(method: str, params: dict | None = None) -> str:
    return json.dumps({"__dagster_pipes_version": "0.1", "method": method, "params": params})


def log(text: str) -> str:
    return message("log", {"message": text, "level": "INFO"})


def materialized(rows: int) -> str:
    params = {
        "asset_key": "reported",
        "metadata": {"rows": {"raw_value": rows, "type": "int"}},
        "data_version": None,
    }
    return message("report_asset_materialization", params)


@pytest.fixture
def pipes_store(sync_client, bucket_name):
    store = sync_client.create_store(bucket_name)
    yield store
    sync_client.delete_store(bucket_name)


def test_a_context_replaced_in_the_bucket_stops_the_job(pipes_store, nats_resource, sync_client):
    injector = PipesNatsContextInjector(bucket=pipes_store.bucket, resource=nats_resource)
    loader = PipesNatsContextLoader(sync_client)
    context = {"extras": {"target": "lake/trips"}, "run_id": "r1"}
    with injector.inject_context(context) as params:
        with loader.load_context(params) as loaded:
            assert loaded == context
        # the secret reaches the job in its params only: no object of the bucket holds it
        for info in pipes_store.list():
            assert params[SECRET_PARAM].encode() not in pipes_store.get_bytes(info.name)

        pipes_store.put(params[KEY_PARAM], json.dumps({**context, "extras": EVIL_EXTRAS}).encode())
        with pytest.raises(PipesObjectForged) as caught, loader.load_context(params):
            pass
    assert isinstance(caught.value, DagsterPipesError)
    assert (caught.value.bucket, caught.value.name) == (pipes_store.bucket, params[KEY_PARAM])
    assert "not what this session wrote" in str(caught.value)


def test_a_context_moved_from_another_session_stops_the_job(
    pipes_store, nats_resource, sync_client
):
    """A sealed context of one session, copied over another's, does not open with the other
    session's secret."""
    injector = PipesNatsContextInjector(bucket=pipes_store.bucket, resource=nats_resource)
    loader = PipesNatsContextLoader(sync_client)
    with (
        injector.inject_context({"extras": EVIL_EXTRAS}) as theirs,
        injector.inject_context({"extras": {}}) as ours,
    ):
        pipes_store.put(ours[KEY_PARAM], pipes_store.get_bytes(theirs[KEY_PARAM]))
        with (
            pytest.raises(PipesObjectForged, match="MAC does not match"),
            loader.load_context(ours),
        ):
            pass


BAD_CHUNKS = {
    # another writer's messages, as any publisher to the bucket can put them
    "forged": (log("forged two") + "\n" + materialized(1_000_000)).encode(),
    # a line the reader cannot take as a message: it stopped the reading thread
    "malformed": b"[1]\n",
    "not text": b"\xff\xfe",
}


@pytest.mark.parametrize("bad", [*BAD_CHUNKS, "replayed"])
def test_a_bad_chunk_is_reported_and_later_messages_still_arrive(
    bad, pipes_store, nats_resource, sync_client, instance
):
    """The job's chunk 2 is replaced (or its chunk 1 is replayed as chunk 2); chunk 3, with
    the closing message, arrives all the same, and the step's log names the bad chunk."""
    reader = PipesNatsMessageReader(
        bucket=pipes_store.bucket, resource=nats_resource, interval=3600
    )
    injector = PipesNatsContextInjector(bucket=pipes_store.bucket, resource=nats_resource)

    @asset
    def reported(context):
        # the reader reads once the session closes (interval=3600): every chunk is in place
        with open_pipes_session(context, injector, message_reader=reader) as session:
            params = session.message_reader_params
            job = PipesNatsMessageWriterChannel(
                sync_client.store(pipes_store.bucket),
                params[KEY_PREFIX_PARAM],
                params[SECRET_PARAM],
            )
            job.upload_messages_chunk(
                io.StringIO(message("opened", {}) + "\n" + log("real one")), 1
            )
            job.upload_messages_chunk(io.StringIO(log("real two")), 2)
            second = chunk_name(params[KEY_PREFIX_PARAM], 2)
            if bad == "replayed":
                first = chunk_name(params[KEY_PREFIX_PARAM], 1)
                pipes_store.put(second, pipes_store.get_bytes(first))
            else:
                pipes_store.put(second, BAD_CHUNKS[bad])
            last = [log("real three"), materialized(24), message("closed")]
            job.upload_messages_chunk(io.StringIO("\n".join(last)), 3)
        yield from session.get_results()

    result = materialize([reported], instance=instance)
    assert result.success
    [materialization] = result.asset_materializations_for_node("reported")
    assert materialization.metadata["rows"].value == 24
    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert "real one" in logs and "real three" in logs, logs
    assert "forged two" not in logs and "real two" not in logs
    [ignored] = [m for m in logs if m.startswith("[pipes] ignored message chunk 2")]
    assert f"'{pipes_store.bucket}'" in ignored and "/2.json" in ignored
    assert "not what this session wrote" in ignored
    assert any(m.startswith("[pipes] gave up message chunk 2") for m in logs), logs
