"""One event-loop thread and one NATS connection per process, whichever faces it uses: the
Dagster resource and IO manager, the fsspec filesystem and the Airflow hook share them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess, free_port
from natsobj.settings import ConnectionSettings
from natsobj.shared import SharedClient, close_shared_clients, shared_client

EVERY_FACE = textwrap.dedent(
    """
    import json, os, sys, threading, urllib.request

    url, monitor, bucket = sys.argv[1:4]
    host, port = url.removeprefix("nats://").split(":")
    os.environ["AIRFLOW_CONN_NATS_DEFAULT"] = json.dumps(
        {"conn_type": "nats", "host": host, "port": int(port)}
    )
    import fsspec
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
    from dagster import AssetKey, build_input_context, build_output_context
    from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource

    resource = NatsObjectStoreResource(url=url)
    io_manager = NatsObjectStoreIOManager(resource=resource, bucket=bucket)
    loaded = []
    for i in range(3):
        key = AssetKey(f"a{i}")
        io_manager.handle_output(build_output_context(asset_key=key), b"x" * (i + 1))
        upstream = build_output_context(asset_key=key)
        context = build_input_context(asset_key=key, upstream_output=upstream)
        loaded.append(io_manager.load_input(context).decode())
    with resource.get_store(bucket) as store:
        listed = sorted(i.name for i in store.list())
    fs = fsspec.filesystem("nats", url=url, skip_instance_cache=True)
    fs_listed = fs.ls(f"{bucket}/dagster", detail=False)
    with NatsObjectStoreHook() as hook:
        hook_size = hook.get_info(bucket, "dagster/a2").size
    connz = json.load(urllib.request.urlopen(f"http://{monitor}/connz"))
    print(json.dumps({
        "loaded": loaded, "listed": listed, "fs_listed": fs_listed, "hook_size": hook_size,
        "threads": sorted(t.name for t in threading.enumerate()),
        "connections": connz["num_connections"],
    }))
    """
)


@pytest.fixture
def monitored_server(tmp_path: Path):
    monitor = f"127.0.0.1:{free_port()}"
    with NatsServerProcess(tmp_path / "server", config=f'http: "{monitor}"') as server:
        yield server, monitor


def test_every_face_shares_one_loop_thread_and_one_connection(monitored_server, tmp_path):
    server, monitor = monitored_server
    script = tmp_path / "every_face.py"
    script.write_text(EVERY_FACE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow")
    done = subprocess.run(
        [sys.executable, str(script), server.url, monitor, "faces"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # every face did real work through the connection ...
    assert report["loaded"] == ["x", "xx", "xxx"]
    assert report["listed"] == ["dagster/a0", "dagster/a1", "dagster/a2"]
    assert report["fs_listed"] == ["faces/dagster/a0", "faces/dagster/a1", "faces/dagster/a2"]
    assert report["hook_size"] == 3
    # ... on one loop thread (no fsspec IO loop beside it) and one server connection
    assert report["threads"].count("natsobj-loop") == 1
    assert not [t for t in report["threads"] if t.startswith("fsspec")], report["threads"]
    assert report["connections"] == 1


def test_shared_client_survives_close_and_is_reused(nats_url: str, bucket_name: str) -> None:
    settings = ConnectionSettings.from_url(nats_url)
    first = shared_client(settings)
    store = first.create_store(bucket_name)
    try:
        first.close()
        with shared_client(ConnectionSettings.from_url(nats_url, name="other label")) as again:
            assert isinstance(again, SharedClient)
            assert again.aio is first.aio  # the same connection, closed by neither
            again.cached_store(bucket_name).put("a", b"1")
        assert first.cached_store(bucket_name) is not None
        assert store.get_bytes("a") == b"1"
        other_user = shared_client(ConnectionSettings.from_url(nats_url, user="someone"))
        assert other_user.aio is not first.aio  # credentials are part of the identity
    finally:
        natsobj.connect(nats_url).delete_store(bucket_name)


def test_cached_store_binds_once_and_forgets_deleted_buckets(nats_url: str, bucket_name: str):
    client = shared_client(ConnectionSettings.from_url(nats_url))
    client.create_store(bucket_name)
    bound = client.cached_store(bucket_name)
    assert client.cached_store(bucket_name).aio is bound.aio
    client.delete_store(bucket_name)
    with pytest.raises(natsobj.BucketNotFound):
        client.cached_store(bucket_name)


def test_a_forked_child_gets_its_own_connection(nats_url: str) -> None:
    parent = shared_client(ConnectionSettings.from_url(nats_url))
    parent_names = parent.store_names()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's loop thread does not exist here
        try:
            child = shared_client(ConnectionSettings.from_url(nats_url))
            ok = child.aio is not parent.aio and child.store_names() == parent_names
            os.write(write, b"ok" if ok else b"shared the parent's connection")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 100) == b"ok"
    assert parent.store_names() == parent_names  # the parent's connection is untouched


def test_close_shared_clients_drains_and_the_next_call_reconnects(nats_url: str) -> None:
    settings = ConnectionSettings.from_url(nats_url)
    before = shared_client(settings)
    close_shared_clients()
    assert before.aio.nc is None
    after = shared_client(settings)
    assert after.aio is not before.aio and isinstance(after.store_names(), list)
