"""ADR-20 links across buckets (issue 39, the link rule): a writer of one bucket can plant a
link to any bucket, readable or not by it. Every read and copy of the core, the blocking
facade, the CLI and fsspec follows such a link only when its caller asks (``follow_links``);
otherwise it is a LinkError naming the link and its target, never the target's bytes and
never a silent skip. A link within its own bucket is followed as before."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

import natsobj
from natsobj.aio.copy import copy_object
from natsobj.errors import LinkError
from natsobj.sync import run
from tests.cli.cli_support import NATSOBJ_BIN, cli_env

SECRET = b"salaries: the vault's bytes"


@pytest.fixture
def vault(sync_client, bucket_name: str) -> Iterator[natsobj.ObjectStore]:
    store = sync_client.create_store(bucket_name + "vault")
    store.put("keys/master", SECRET)
    yield store
    sync_client.delete_store(store.bucket)


@pytest.fixture
def planted(store, vault) -> natsobj.ObjectStore:
    """``store`` (the staging bucket) holding ``report.csv``, a link into the vault, and
    ``alias.csv``, a link to ``data.csv`` beside it."""
    store.add_link("report.csv", vault.get_info("keys/master"))
    store.add_link("alias.csv", store.put("data.csv", b"staging's own bytes"))
    return store


def _refused(call) -> LinkError:
    with pytest.raises(LinkError) as caught:
        call()
    text = str(caught.value)
    assert "report.csv" in text and "vault/keys/master" in text, text
    return caught.value


def test_every_read_refuses_a_link_into_another_bucket_unless_asked(planted, tmp_path) -> None:
    store = planted
    _refused(lambda: store.get_bytes("report.csv"))
    _refused(lambda: store.get_range("report.csv", 0, 5))
    _refused(lambda: store.open_range("report.csv"))
    _refused(lambda: store.get_file("report.csv", tmp_path / "out"))
    assert not (tmp_path / "out").exists()

    def streamed() -> None:
        with store.get("report.csv") as reader:
            reader.read()

    _refused(streamed)
    assert store.get_bytes("report.csv", follow_links=True) == SECRET
    assert store.get_range("report.csv", 0, 8, follow_links=True) == SECRET[:8]
    # within its own bucket a link reaches nothing its writer could not: followed
    assert store.get_bytes("alias.csv") == b"staging's own bytes"


def test_a_copy_refuses_a_link_into_another_bucket_unless_asked(
    planted, sync_client, bucket_name
) -> None:
    published = sync_client.create_store(bucket_name + "pub")
    try:
        _refused(lambda: run(copy_object(planted.aio, "report.csv", published.aio, "out.csv")))
        assert published.list() == []
        run(copy_object(planted.aio, "report.csv", published.aio, "out.csv", follow_links=True))
        assert published.get_bytes("out.csv") == SECRET
    finally:
        sync_client.delete_store(published.bucket)


def test_fsspec_refuses_unless_the_filesystem_follows_links(planted, nats_url) -> None:
    url = f"nats://{planted.bucket}/report.csv"
    fs = fsspec.filesystem("nats", url=nats_url, skip_instance_cache=True)
    _refused(lambda: fs.cat_file(url))
    _refused(lambda: fs.open(url, "rb").read())
    following = fsspec.filesystem(
        "nats", url=nats_url, follow_links="yes", skip_instance_cache=True
    )
    assert following.cat_file(url) == SECRET


def test_the_cli_refuses_unless_given_follow_links(planted, nats_url, tmp_path: Path) -> None:
    env = cli_env(NATS_URL=nats_url)
    source = f"nats://{planted.bucket}/report.csv"
    for args in (["cat", source], ["get", source, str(tmp_path / "got")]):
        refused = subprocess.run(
            [str(NATSOBJ_BIN), *args], env=env, capture_output=True, timeout=60
        )
        assert refused.returncode != 0
        assert SECRET not in refused.stdout
        assert b"vault/keys/master" in refused.stderr and b"follow-links" in refused.stderr
        assert not (tmp_path / "got").exists()
    followed = subprocess.run(
        [str(NATSOBJ_BIN), "cat", "--follow-links", source],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout == SECRET
