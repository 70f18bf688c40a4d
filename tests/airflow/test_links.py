"""The provider acts for the DAG's author, with the connection's rights: a link a writer of a
shared bucket plants into another bucket is never followed by the copy operators or the
remote-log reader (issue 39, finding 13). Each refuses naming the link and its target, and
neither the published bucket nor the log page ever holds the target's bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from airflow_natsobj.log.nats_task_handler import NatsRemoteLogIO
from airflow_natsobj.operators.copy import NatsCopyObjectOperator, NatsCopyPrefixOperator

SECRET = b"vault: the master key"
PREFIX = "airflow-logs"


@pytest.fixture
def vault(sync_client, bucket_name: str) -> Iterator:
    store = sync_client.create_store(bucket_name + "vault")
    store.put("keys/master", SECRET)
    yield store
    sync_client.delete_store(store.bucket)


@pytest.fixture
def published(sync_client, bucket_name: str) -> Iterator:
    store = sync_client.create_store(bucket_name + "pub")
    yield store
    sync_client.delete_store(store.bucket)


def test_the_copy_operators_refuse_a_link_into_another_bucket(
    nats_default, store, vault, published
) -> None:
    """``store`` is the staging bucket its writers share; one of them plants the link."""
    store.put("staged/a.csv", b"a,b\n1,2\n")
    store.add_link("staged/report.csv", vault.get_info("keys/master"))
    one = NatsCopyObjectOperator(
        task_id="copy",
        source_bucket_key=f"nats://{store.bucket}/staged/report.csv",
        dest_bucket_key=f"nats://{published.bucket}/report.csv",
    )
    with pytest.raises(Exception, match=f"{vault.bucket}/keys/master") as caught:
        one.execute({})
    assert "another bucket" in str(caught.value)
    every = NatsCopyPrefixOperator(
        task_id="copy_prefix",
        source_bucket_name=store.bucket,
        source_bucket_prefix="staged/",
        dest_bucket_prefix=f"nats://{published.bucket}/out/",
    )
    with pytest.raises(Exception, match=f"{vault.bucket}/keys/master"):
        every.execute({})
    for info in published.list():
        assert SECRET not in published.get_bytes(info.name), info.name


def test_the_log_page_does_not_read_through_a_planted_link(
    nats_default, store, vault, tmp_path: Path
) -> None:
    io = NatsRemoteLogIO(remote_base=f"nats://{store.bucket}/{PREFIX}", base_log_folder=tmp_path)
    relative = "dag_id=d/run_id=r/task_id=t/attempt=1.log"
    store.add_link(f"{PREFIX}/{relative}", vault.get_info("keys/master"))
    _, logs = io.read(relative, ti=None)
    assert logs is not None
    text = "\n".join(logs)
    assert SECRET.decode() not in text
    assert f"{vault.bucket}/keys/master" in text  # the page says why there is no log
    _, streams = io.stream(relative, ti=None)
    assert all(SECRET.decode() not in line for stream in streams for line in stream)
