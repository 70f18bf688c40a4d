"""ADR-19: a store in account A used from account I through an API prefix and inbox prefix,
and a store in a hub domain used from a leaf node, against real server configurations."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess, free_port


def two_accounts(import_objects: bool = True, import_flow_control: bool = True) -> str:
    """The ADR-19 test configuration with its ``$KV`` lines written for ``$O``, plus the
    ``$JS.FC`` and ``$JS.ACK`` services that push consumers answer on (issue 10)."""
    obj_import = (
        "{service: {account: A, subject: '$O.>'}, to: 'fromA.$O.>'}" if import_objects else ""
    )
    fc_import = "{service: {account: A, subject: '$JS.FC.>'}}" if import_flow_control else ""
    return f"""
accounts: {{
  A: {{
    users: [ {{user: a, password: a}} ]
    jetstream: enabled
    exports: [
      {{service: '$JS.API.>'}}
      {{service: '$O.>'}}
      {{service: '$JS.FC.>'}}
      {{service: '$JS.ACK.>'}}
      {{stream: 'forI.>'}}
    ]
  }},
  I: {{
    users: [ {{user: i, password: i}} ]
    imports: [
      {{service: {{account: A, subject: '$JS.API.>'}}, to: 'fromA.>'}}
      {obj_import}
      {fc_import}
      {{service: {{account: A, subject: '$JS.ACK.>'}}}}
      {{stream: {{subject: 'forI.>', account: A}}}}
    ]
  }},
  OTHER: {{ users: [ {{user: o, password: o}} ] }}
}}
"""


@pytest.fixture(scope="module")
def accounts_server(tmp_path_factory) -> Iterator[NatsServerProcess]:
    server = NatsServerProcess(tmp_path_factory.mktemp("accounts"), config=two_accounts())
    server.start()
    yield server
    server.stop()


def url_for(server: NatsServerProcess, user: str) -> str:
    return server.url.replace("nats://", f"nats://{user}:{user}@")


def test_store_in_account_a_used_from_account_i(accounts_server, bucket_name):
    with natsobj.connect(url_for(accounts_server, "a")) as owner:
        owner.create_store(bucket_name)
        with natsobj.connect(
            url_for(accounts_server, "i"), api_prefix="fromA", inbox_prefix="forI"
        ) as importer:
            store = importer.store(bucket_name)
            data = os.urandom(900_000)
            info = store.put("shared/data.bin", data, metadata={"from": "I"})
            assert info.chunks == 7
            assert store.get_info("shared/data.bin").metadata == {"from": "I"}
            assert store.get_bytes("shared/data.bin") == data
            assert [i.name for i in store.list()] == ["shared/data.bin"]
            with store.watch() as watcher:
                assert watcher.next(5).name == "shared/data.bin"
                store.put("second", b"2")
                assert watcher.next(5).name == "second"
            store.delete("second")
            assert [i.name for i in store.list()] == ["shared/data.bin"]
        # the owner sees exactly what the importer wrote, on the stream's own $O subjects
        assert owner.store(bucket_name).get_bytes("shared/data.bin") == data
        owner.delete_store(bucket_name)


def test_plain_settings_from_account_i_do_not_reach_account_a(accounts_server, bucket_name):
    with natsobj.connect(url_for(accounts_server, "a")) as owner:
        owner.create_store(bucket_name)
        with (
            natsobj.connect(url_for(accounts_server, "i"), api_timeout=1.0) as importer,
            pytest.raises(natsobj.NotConnected, match="API prefix"),
        ):
            importer.store(bucket_name)
        owner.delete_store(bucket_name)


def test_missing_object_import_gives_a_clear_error(tmp_path, bucket_name):
    config = two_accounts(import_objects=False)
    with NatsServerProcess(tmp_path, config=config) as server:
        with natsobj.connect(url_for(server, "a")) as owner:
            owner.create_store(bucket_name)
        with natsobj.connect(
            url_for(server, "i"), api_prefix="fromA", inbox_prefix="forI", api_timeout=1.0
        ) as c:
            store = c.store(bucket_name)  # API calls pass through the prefix...
            with pytest.raises(natsobj.NotConnected, match=r"import '\$O\.>'"):
                store.put("x", b"data")  # ...but chunk publishes have nowhere to go
            assert store.list() == []  # and nothing partial is visible


def test_domain_across_a_leaf_node(tmp_path, bucket_name):
    leaf_port = free_port()
    hub_config = f"server_name: hub\njetstream: {{domain: hub}}\nleafnodes: {{port: {leaf_port}}}\n"
    leaf_config = (
        "server_name: leaf\njetstream: {domain: leaf}\n"
        f"leafnodes: {{remotes: [{{url: 'nats-leaf://127.0.0.1:{leaf_port}'}}]}}\n"
    )
    with (
        NatsServerProcess(tmp_path / "hub", config=hub_config) as hub,
        NatsServerProcess(tmp_path / "leaf", config=leaf_config) as leaf,
        natsobj.connect(hub.url) as on_hub,
    ):
        on_hub.create_store(bucket_name)
        data = os.urandom(500_000)
        deadline = time.monotonic() + 10
        while True:  # the leaf connection comes up asynchronously
            try:
                with natsobj.connect(leaf.url, domain="hub", api_timeout=1.0) as via_leaf:
                    store = via_leaf.store(bucket_name)
                    store.put("from-leaf", data)
                    assert store.get_bytes("from-leaf") == data
                    assert [i.name for i in store.list()] == ["from-leaf"]
                break
            except natsobj.NotConnected:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert on_hub.store(bucket_name).get_bytes("from-leaf") == data
