"""One stored compute log that cannot be read costs only its own view (issue 39, finding 11):
Dagster polls every live log view of a process from one thread, and a record whose digest a
writer of the bucket dropped ended that thread, so no other run's view updated again."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dagster._core.storage.compute_log_manager import CapturedLogData, ComputeIOType

from dagster_natsobj import NatsComputeLogManager
from tests.security.test_missing_digest_faces import strip_digest

VIEW_WAIT = 30.0  # Dagster polls every 5 seconds


class View:
    """What one log view in the UI has been shown so far."""

    def __init__(self) -> None:
        self.text = b""
        self.changed = threading.Condition()

    def __call__(self, data: CapturedLogData) -> None:
        with self.changed:
            self.text += data.stdout or b""
            self.changed.notify_all()

    def wait_for(self, wanted: bytes) -> bytes:
        with self.changed:
            self.changed.wait_for(lambda: wanted in self.text, timeout=VIEW_WAIT)
            return self.text


def test_an_unreadable_log_shows_why_and_the_other_views_keep_updating(
    nats_resource, sync_client, raw, bucket_name, tmp_path: Path
):
    manager = NatsComputeLogManager(
        bucket_name, resource=nats_resource, prefix="logs", local_dir=str(tmp_path)
    )
    store = sync_client.create_store(bucket_name)
    good, bad = ["run-good", "compute_logs", "step"], ["run-bad", "compute_logs", "step"]
    good_name = manager.object_name(good, ComputeIOType.STDOUT, partial=True)
    bad_name = manager.object_name(bad, ComputeIOType.STDOUT, partial=True)
    store.put(good_name, b"good 1\n")
    store.put(bad_name, b"bad 1\n")
    good_view, bad_view, late_view = View(), View(), View()
    # the bad view first: Dagster's thread polls in this order, so on each round it reaches
    # the bad log before the good one
    subscriptions = [manager.subscribe(bad)(bad_view), manager.subscribe(good)(good_view)]
    try:
        assert good_view.wait_for(b"good 1\n") == b"good 1\n"
        store.put(bad_name, b"bad 1\nbad 2\n")  # the log grows, and its record loses its
        strip_digest(raw, bucket_name, bad_name)  # digest before the view reads it
        store.put(good_name, b"good 1\ngood 2\n")
        assert good_view.wait_for(b"good 2\n") == b"good 1\ngood 2\n"

        # what the bad log's view shows, opened now or read again: why, not its bytes
        subscriptions.append(manager.subscribe(bad)(late_view))
        shown = late_view.wait_for(b"cannot be shown")
        assert b"the meta record has no digest" in shown and bad_name.encode() in shown, shown
        assert manager.get_log_data(bad).stdout == shown
    finally:
        for subscription in subscriptions:
            subscription.dispose()
        manager.dispose()
        sync_client.delete_store(bucket_name)


def test_captured_output_sits_in_a_directory_only_its_user_can_enter(nats_resource, bucket_name):
    """Issue 39, finding 17: captured step output sat in the shared temporary directory with
    modes 0755/0644, readable by every local user."""
    manager = NatsComputeLogManager(bucket_name, resource=nats_resource)
    try:
        local = Path(manager.local_manager._base_dir)  # where Dagster captures
        st = local.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o700)
    finally:
        manager.dispose()
