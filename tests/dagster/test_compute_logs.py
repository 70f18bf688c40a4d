"""The compute log manager on a real Dagster instance: a DAGSTER_HOME whose dagster.yaml names
``dagster_natsobj.NatsComputeLogManager``, one ``materialize`` of an asset that prints to stdout
and stderr, and the instance's own manager reading the logs back as the UI does. A second run
points the manager at a port nothing listens on: the run succeeds and the logs stay local."""

from __future__ import annotations

import socket
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import (
    DagsterEventType,
    DagsterInstance,
    asset,
    materialize,
)
from dagster._core.storage.compute_log_manager import ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION

from dagster_natsobj import NatsComputeLogManager, NatsObjectStoreResource
from natsobj.errors import BucketNotFound, ObjectNotFound
from natsobj.model import DEFAULT_CHUNK_SIZE, digest_of
from tests.fetch_counter import FetchCounter

PREFIX = "team/logs"
FILLER_LINES = 40_000  # about 1.9 MB of stdout: many chunks, so a ranged read shows
PARTIAL_WAIT = 30.0


@dataclass
class Run:
    instance: DagsterInstance
    run_id: str
    log_key: list[str]
    markers: dict[str, str]
    partial_seen: bytes
    local_dir: Path


def _write_home(home: Path, config: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(config)


def _log_key(instance: DagsterInstance, run_id: str) -> list[str]:
    (captured,) = [
        record.dagster_event.logs_captured_data
        for record in instance.all_logs(run_id, of_type=DagsterEventType.LOGS_CAPTURED)
        if record.dagster_event is not None
    ]
    return list(instance.compute_log_manager.build_log_key_for_run(run_id, captured.file_key))


def _wait_for_partial(
    resource: NatsObjectStoreResource, bucket: str, run_id: str, marker: str
) -> bytes:
    """The stdout copy the manager uploads while the step still runs, once it holds ``marker``
    (polled: the upload thread's interval decides when it lands)."""
    directory = f"{PREFIX}/storage/{run_id}/compute_logs/"
    deadline = time.monotonic() + PARTIAL_WAIT
    with resource.get_client() as client:
        while time.monotonic() < deadline:
            try:
                store = client.store(bucket)
                for info in store.list(prefix=directory):
                    if info.name.endswith(".out.partial"):
                        data = store.get_bytes(info.name)
                        if marker.encode() in data:
                            return data
            except (BucketNotFound, ObjectNotFound):
                pass
            time.sleep(0.1)
    raise AssertionError(f"no partial stdout holding {marker!r} within {PARTIAL_WAIT}s")


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory, nats_url: str) -> Iterator[Run]:
    home = tmp_path_factory.mktemp("logs_home")
    local_dir = home / "staging"
    bucket = f"logs-{uuid.uuid4().hex[:8]}"
    _write_home(
        home,
        f"""
compute_logs:
  module: dagster_natsobj
  class: NatsComputeLogManager
  config:
    url: {nats_url}
    bucket: {bucket}
    prefix: {PREFIX}
    local_dir: {local_dir}
    upload_interval: 1
""",
    )
    tag = uuid.uuid4().hex
    markers = {"out": f"OUT-{tag}", "err": f"ERR-{tag}", "last": f"LAST-{tag}"}
    resource = NatsObjectStoreResource(url=nats_url)
    seen: dict[str, bytes] = {}

    @asset
    def chatty(context) -> None:  # annotated, Dagster would see a string here
        print(markers["out"], flush=True)
        print(markers["err"], file=sys.stderr, flush=True)
        seen["partial"] = _wait_for_partial(resource, bucket, context.run.run_id, markers["out"])
        for line in range(FILLER_LINES):
            print(f"filler line {line:06d} of the chatty asset's stdout")
        print(markers["last"], flush=True)

    instance = DagsterInstance.from_config(str(home))
    try:
        result = materialize([chatty], instance=instance)
        assert result.success
        yield Run(
            instance,
            result.run_id,
            _log_key(instance, result.run_id),
            markers,
            seen["partial"],
            local_dir,
        )
    finally:
        instance.dispose()
        with resource.get_client() as client:
            if bucket in client.store_names():
                client.delete_store(bucket)


def test_the_instance_uses_the_manager_dagster_yaml_names(stored_run: Run) -> None:
    manager = stored_run.instance.compute_log_manager
    assert isinstance(manager, NatsComputeLogManager)
    assert manager.upload_interval == 1


def test_a_running_steps_stdout_is_uploaded_as_it_runs(stored_run: Run) -> None:
    assert stored_run.markers["out"].encode() in stored_run.partial_seen
    assert stored_run.markers["last"].encode() not in stored_run.partial_seen


def test_both_logs_are_stored_whole_and_the_partial_copies_are_gone(
    stored_run: Run, nats_url: str
) -> None:
    manager = stored_run.instance.compute_log_manager
    assert isinstance(manager, NatsComputeLogManager)
    run_id, file_key = stored_run.log_key[0], stored_run.log_key[-1]
    out_name = f"{PREFIX}/storage/{run_id}/compute_logs/{file_key}.out"
    assert manager.object_name(stored_run.log_key, ComputeIOType.STDOUT) == out_name
    resource = NatsObjectStoreResource(url=nats_url)
    with resource.get_store(
        manager.display_path_for_type(stored_run.log_key, ComputeIOType.STDOUT).split("/")[2]
    ) as store:
        out = store.get_bytes(out_name)
        err = store.get_bytes(out_name[: -len(".out")] + ".err")
        assert store.get_info(out_name).headers["Content-Type"] == ["text/plain"]
        for name in (out_name + ".partial", out_name[: -len(".out")] + ".err.partial"):
            with pytest.raises(ObjectNotFound):
                store.get_info(name)
    assert stored_run.markers["out"].encode() in out
    assert stored_run.markers["last"].encode() in out
    assert stored_run.markers["err"].encode() in err
    assert stored_run.markers["out"].encode() not in err
    # the local copies are gone: every read below comes from the store
    assert not any(path.is_file() for path in stored_run.local_dir.rglob("*.out"))


def test_the_instance_reads_the_logs_back_from_the_store(stored_run: Run) -> None:
    manager = stored_run.instance.compute_log_manager
    data = manager.get_log_data(stored_run.log_key)
    assert data.stdout is not None and data.stderr is not None
    assert stored_run.markers["out"].encode() in data.stdout
    assert stored_run.markers["last"].encode() in data.stdout
    assert stored_run.markers["err"].encode() in data.stderr
    assert manager.is_capture_complete(stored_run.log_key)

    lines, cursor = manager.read_log_lines_for_log_key_prefix(
        stored_run.log_key[:-1], cursor=None, io_type=ComputeIOType.STDERR
    )
    assert stored_run.markers["err"] in lines
    assert cursor is not None


def test_a_cursor_read_fetches_only_the_chunks_it_needs(stored_run: Run) -> None:
    """What the UI's log viewer does: chunks of ``max_bytes`` from a cursor, each a ranged
    read of the stored object; together they are the whole log."""
    manager = stored_run.instance.compute_log_manager
    whole = manager.get_log_data(stored_run.log_key).stdout
    assert whole is not None and len(whole) > 1_500_000
    middle = manager.build_cursor(len(whole) // 2, 0)
    with FetchCounter() as counted:
        chunk = manager.get_log_data(stored_run.log_key, cursor=middle, max_bytes=1000)
    assert chunk.stdout == whole[len(whole) // 2 : len(whole) // 2 + 1000]
    assert chunk.cursor is not None
    assert manager.parse_cursor(chunk.cursor)[0] == len(whole) // 2 + 1000
    assert 0 < counted.bytes <= 2 * DEFAULT_CHUNK_SIZE

    pieces, cursor = [], None
    while True:
        data = manager.get_log_data(stored_run.log_key, cursor=cursor, max_bytes=1024 * 1024)
        if not data.stdout:
            break
        pieces.append(data.stdout)
        cursor = data.cursor
    assert b"".join(pieces) == whole


def test_the_ui_is_pointed_at_nats_urls(stored_run: Run) -> None:
    manager = stored_run.instance.compute_log_manager
    assert isinstance(manager, NatsComputeLogManager)
    metadata = manager.get_log_metadata(stored_run.log_key)
    bucket = manager.display_path_for_type(stored_run.log_key, ComputeIOType.STDOUT).split("/")[2]
    for io_type, location, url in (
        (ComputeIOType.STDOUT, metadata.stdout_location, metadata.stdout_download_url),
        (ComputeIOType.STDERR, metadata.stderr_location, metadata.stderr_download_url),
    ):
        expected = f"nats://{bucket}/{manager.object_name(stored_run.log_key, io_type)}"
        assert location == url == expected


def test_an_upload_streams_from_the_file(
    tmp_path: Path, nats_resource: NatsObjectStoreResource, bucket_name: str
) -> None:
    """A log far larger than the put window goes up in bounded memory: the manager hands the
    open file to the put, never the log's bytes."""
    manager = NatsComputeLogManager(
        bucket_name, resource=nats_resource, local_dir=str(tmp_path / "staging")
    )
    log_key = ["run", "compute_logs", "big"]
    path = Path(manager.local_manager.get_captured_local_path(log_key, "out"))
    path.parent.mkdir(parents=True)
    block = bytes(range(256)) * 4096  # 1 MiB
    with path.open("wb") as handle:
        for _ in range(48):
            handle.write(block)
    tracemalloc.start()
    try:
        manager.upload_to_cloud_storage(log_key, ComputeIOType.STDOUT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        with nats_resource.get_store(bucket_name) as store:
            info = store.get_info(manager.object_name(log_key, ComputeIOType.STDOUT))
            assert info.size == path.stat().st_size
            assert info.digest == digest_of(path.read_bytes())
        assert peak < 16 * 1024 * 1024
    finally:
        with nats_resource.get_client() as client:
            client.delete_store(bucket_name)


def test_deleting_a_runs_logs_removes_its_objects(
    tmp_path: Path, nats_resource: NatsObjectStoreResource, bucket_name: str
) -> None:
    """What Dagster calls when a run is deleted: by log key, and by prefix (a run's logs); a
    prefix of ["a"] never reaches the logs of ["apple"]."""
    manager = NatsComputeLogManager(
        bucket_name, resource=nats_resource, prefix="", local_dir=str(tmp_path / "staging")
    )
    keys = [
        ["a", "compute_logs", "one"],
        ["a", "compute_logs", "two"],
        ["apple", "compute_logs", "x"],
    ]
    for log_key in keys:
        for io_type in ComputeIOType:
            path = Path(
                manager.local_manager.get_captured_local_path(log_key, IO_TYPE_EXTENSION[io_type])
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{log_key[-1]} {io_type.value}\n")
            manager.upload_to_cloud_storage(log_key, io_type)
            path.unlink()
    try:
        assert (
            sorted(
                manager.get_log_keys_for_log_key_prefix(["a", "compute_logs"], ComputeIOType.STDOUT)
            )
            == keys[:2]
        )
        assert manager.get_log_data(keys[0]).stdout == b"one stdout\n"
        manager.delete_logs(log_key=keys[0])
        assert manager.get_log_data(keys[0]).stdout is None
        assert manager.get_log_data(keys[1]).stdout == b"two stdout\n"
        manager.delete_logs(prefix=["a"])
        with nats_resource.get_store(bucket_name) as store:
            assert sorted(info.name for info in store.list()) == [
                "storage/apple/compute_logs/x.err",
                "storage/apple/compute_logs/x.out",
            ]
    finally:
        with nats_resource.get_client() as client:
            client.delete_store(bucket_name)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_store_does_not_fail_the_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write_home(
        home,
        f"""
compute_logs:
  module: dagster_natsobj
  class: NatsComputeLogManager
  config:
    url: nats://127.0.0.1:{_closed_port()}
    connect_timeout: 1
    bucket: unreachable-logs
    local_dir: {tmp_path / "staging"}
    show_url_only: true
""",
    )
    marker = f"KEPT-{uuid.uuid4().hex}"

    @asset
    def quiet() -> None:
        print(marker, flush=True)

    instance = DagsterInstance.from_config(str(home))
    try:
        result = materialize([quiet], instance=instance)
        assert result.success
        teardown = [
            record.dagster_event
            for record in instance.all_logs(result.run_id, of_type=DagsterEventType.ENGINE_EVENT)
            if record.dagster_event is not None
            and record.dagster_event.message == "Exception while cleaning up compute log capture"
        ]
        assert len(teardown) == 1
        error = teardown[0].engine_event_data.error
        assert error is not None and "NotConnected" in error.cls_name
        assert "cannot connect" in error.message
        # the captured logs stay where they were captured, and the instance reads them there
        log_key = _log_key(instance, result.run_id)
        data = instance.compute_log_manager.get_log_data(log_key)
        assert data.stdout is not None and marker.encode() in data.stdout
        # show_url_only: the run's capture event points the UI at the store, not the content
        (captured,) = [
            record.dagster_event.logs_captured_data
            for record in instance.all_logs(result.run_id, of_type=DagsterEventType.LOGS_CAPTURED)
            if record.dagster_event is not None
        ]
        out_url = f"nats://unreachable-logs/dagster/storage/{result.run_id}/compute_logs/{log_key[-1]}.out"
        assert captured.external_stdout_url == out_url
        assert captured.external_stderr_url == out_url[: -len(".out")] + ".err"
        assert captured.shell_cmd.stdout == f"natsobj cat {out_url}"
    finally:
        instance.dispose()
