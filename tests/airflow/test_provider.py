"""Registration with a real Airflow, and Airflow connections becoming ConnectionSettings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import airflow
import jsonschema
import pytest
from airflow.sdk import Connection
from airflow_natsobj.connection import NatsConnectionError, settings_from_connection
from airflow_natsobj.get_provider_info import get_provider_info
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from packaging.version import Version

from natsobj.settings import ConnectionSettings

from .conftest import conn_json


def test_provider_info_matches_airflows_schema() -> None:
    import airflow

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    conn = info["connection-types"][0]
    assert conn["connection-type"] == "nats"
    assert {
        "servers",
        "token",
        "creds_file",
        "nkey_seed_secret",
        "tls_ca",
        "tls_cert",
        "tls_key",
        "domain",
        "api_prefix",
        "embedded",
    } <= set(conn["conn-fields"])
    assert info["filesystems"] == ["airflow_natsobj.fs.nats"]
    assert info["asset-uris"][0]["schemes"] == ["nats"]


def test_provider_discovery_does_not_load_the_nats_client() -> None:
    """Airflow calls get_provider_info in every process that discovers providers: it reads
    the settings table, not the client (nats-py, aiohttp), which loads on first use."""
    probe = (
        "import sys, airflow_natsobj.get_provider_info as g; g.get_provider_info();"
        " print(sorted(m for m in ('nats', 'aiohttp', 'natsobj.sync', 'natsobj.aio')"
        " if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]", loaded


def test_providers_manager_loads_connection_form_and_filesystem() -> None:
    from airflow.providers_manager import ProvidersManager

    try:  # Airflow 3.3: a task's hooks and filesystems come from the SDK's own manager
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime
    except ImportError:  # before, from the one providers manager
        ProvidersManagerTaskRuntime = ProvidersManager

    manager = ProvidersManager()
    runtime = ProvidersManagerTaskRuntime()
    assert "natsobj" in manager.providers
    assert runtime.hooks["nats"].hook_class_name.endswith("NatsObjectStoreHook")
    assert "airflow_natsobj.fs.nats" in runtime.filesystem_module_names
    if Version(airflow.__version__) < Version("3.2"):
        # 3.1 builds a connection form only from a hook's Flask-AppBuilder widgets, not from
        # the provider info's conn-fields: the form is Airflow's generic one (docs/airflow.md)
        assert "nats" not in manager.field_behaviours
        assert not any(name.startswith("extra__nats__") for name in manager.connection_form_widgets)
        return
    assert manager.field_behaviours["nats"]["hidden_fields"] == ["schema"]
    widgets = manager.connection_form_widgets
    assert widgets["extra__nats__token"].is_sensitive
    assert widgets["extra__nats__nkey_seed_secret"].is_sensitive
    assert not widgets["extra__nats__domain"].is_sensitive


def test_cli_lists_provider_hook_and_tests_the_connection(run_airflow) -> None:
    providers = run_airflow("providers", "list")
    assert "natsobj" in providers.stdout, providers.stderr[-2000:]
    hooks = run_airflow("providers", "hooks")
    assert "NatsObjectStoreHook" in hooks.stdout and "nats_conn_id" in hooks.stdout
    tested = run_airflow(
        "connections", "test", "nats_default", env={"AIRFLOW__CORE__TEST_CONNECTION": "Enabled"}
    )
    assert "Connection success!" in tested.stdout, tested.stdout[-2000:] + tested.stderr[-2000:]
    added = run_airflow(
        "connections",
        "add",
        "nats_cli",
        "--conn-type",
        "nats",
        "--conn-host",
        "10.1.2.3",
        "--conn-port",
        "4333",
        "--conn-extra",
        '{"domain": "hub"}',
    )
    assert "Successfully added" in added.stdout, added.stdout + added.stderr[-2000:]
    listed = run_airflow("connections", "list", "-o", "json")
    # 3.1 lists every field of a connection, later releases the id and the type
    listed_rows = [(c["conn_id"], c["conn_type"]) for c in _printed_json(listed.stdout)]
    assert ("nats_cli", "nats") in listed_rows
    (row,) = _printed_json(run_airflow("connections", "get", "nats_cli", "-o", "json").stdout)
    assert row["get_uri"] == "nats://10.1.2.3:4333/?domain=hub"
    assert (
        settings_from_connection(Connection.from_uri(row["get_uri"], conn_id="x")).domain == "hub"
    )


def _conn(**fields) -> Connection:
    extra = fields.pop("extra", None)
    return Connection(
        conn_id="c1", conn_type="nats", extra=json.dumps(extra) if extra else None, **fields
    )


@pytest.mark.parametrize(
    ("fields", "servers"),
    [
        ({"host": "10.0.0.5"}, ["nats://10.0.0.5:4222"]),
        ({"host": "10.0.0.5", "port": 4333}, ["nats://10.0.0.5:4333"]),
        ({"host": "tls://a:4222,tls://b:4222"}, ["tls://a:4222", "tls://b:4222"]),
        ({"extra": {"servers": "nats://a:1,nats://b:2"}}, ["nats://a:1", "nats://b:2"]),
        ({"extra": {"servers": ["nats://a:1"]}}, ["nats://a:1"]),
        ({"extra": {"embedded": True}}, ["embedded"]),
        ({"extra": {"embedded": "true"}, "host": "ignored"}, ["embedded"]),
        ({"extra": {"embedded_dir": "/srv/nats"}}, ["embedded:///srv/nats"]),
        ({"host": "embedded"}, ["embedded"]),
    ],
)
def test_where_the_server_is(fields, servers) -> None:
    assert settings_from_connection(_conn(**fields)).servers == servers


def test_credentials_and_extras_map_onto_settings_fields() -> None:
    settings = settings_from_connection(
        _conn(
            host="h",
            login="alice",
            password="s3cret",
            extra={
                "creds_file": "/c/user.creds",
                "tls_ca": "/c/ca.pem",
                "tls_cert": "/c/cert.pem",
                "tls_key": "/c/key.pem",
                "domain": "hub",
                "connect_timeout": 2.5,
                "extra__nats__inbox_prefix": "_IN.me",
            },
        )
    )
    assert settings == ConnectionSettings(
        servers=["nats://h:4222"],
        user="alice",
        password="s3cret",
        creds_file="/c/user.creds",
        tls_ca="/c/ca.pem",
        tls_cert="/c/cert.pem",
        tls_key="/c/key.pem",
        domain="hub",
        inbox_prefix="_IN.me",
        connect_timeout=2.5,
        name="airflow:c1",
    )
    assert "s3cret" not in repr(settings)
    token = settings_from_connection(
        _conn(host="h", extra={"token": "t0k", "nkey_seed_secret": "SU..."})
    )
    assert (token.token, token.nkey_seed, token.user) == ("t0k", "SU...", None)
    assert settings_from_connection(_conn(host="h", password="only")).token == "only"


def test_a_connection_uri_is_parsed_by_airflow_then_mapped() -> None:
    conn = Connection.from_uri("nats://bob:pw@nats.example:4333?api_prefix=JS.acc.API", conn_id="u")
    settings = settings_from_connection(conn)
    assert settings.servers == ["nats://nats.example:4333"]
    assert (settings.user, settings.password, settings.api_prefix) == ("bob", "pw", "JS.acc.API")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "names no NATS server"),
        ({"host": "h", "extra": {"tokn": "x"}}, "unknown extra 'tokn'"),
        ({"host": "h", "extra": {"domain": "a", "api_prefix": "b"}}, "either domain or api_prefix"),
        ({"host": "h", "extra": {"nkey_seed": "SU..."}}, "in the extra 'nkey_seed_secret'"),
        ({"extra": {"embedded_dir": "nats-data"}}, "'embedded_dir' extra must be an absolute"),
        ({"extra": {"embedded_dir": "./nats-data"}}, "not './nats-data'"),
    ],
)
def test_bad_connections_say_what_to_fix(fields, message) -> None:
    with pytest.raises(NatsConnectionError, match=message) as caught:
        settings_from_connection(_conn(**fields))
    assert "'c1'" in str(caught.value)


def test_a_relative_embedded_dir_is_refused_not_moved_to_the_root(monkeypatch) -> None:
    """A relative directory was read as one under / (``nats-data`` became ``/nats-data``);
    the connection, as Airflow stores it, now fails naming the extra and what to give."""
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

    doc = {"conn_type": "nats", "extra": {"embedded_dir": "nats-data"}}
    monkeypatch.setenv("AIRFLOW_CONN_NATS_RELATIVE", json.dumps(doc))
    with pytest.raises(NatsConnectionError, match="must be an absolute directory") as caught:
        NatsObjectStoreHook(nats_conn_id="nats_relative").settings  # noqa: B018
    assert "'nats_relative'" in str(caught.value)
    ok, message = NatsObjectStoreHook(nats_conn_id="nats_relative").test_connection()
    assert not ok and "absolute" in message


def test_hook_test_connection_reports_success_and_failure(nats_default, monkeypatch) -> None:
    ok, message = NatsObjectStoreHook().test_connection()
    assert ok, message
    assert nats_default in message

    monkeypatch.setenv(
        "AIRFLOW_CONN_NATS_DOWN", conn_json("nats://127.0.0.1:9", connect_timeout=0.5)
    )
    ok, message = NatsObjectStoreHook("nats_down").test_connection()
    assert not ok
    assert "NotConnected" in message and "127.0.0.1:9" in message


def test_hook_exposes_store_operations(nats_default, bucket_name: str) -> None:
    with NatsObjectStoreHook() as hook:
        hook.create_store(bucket_name)
        try:
            info = hook.put(bucket_name, "a/b.txt", b"payload", metadata={"k": "v"})
            assert hook.get_bytes(bucket_name, "a/b.txt") == b"payload"
            assert hook.get_info(bucket_name, "a/b.txt").digest == info.digest
            assert [i.name for i in hook.list(bucket_name)] == ["a/b.txt"]
            with hook.open_reader(bucket_name, "a/b.txt") as reader:
                assert b"".join(reader) == b"payload"
            hook.delete(bucket_name, "a/b.txt")
            assert hook.list(bucket_name) == []
        finally:
            hook.delete_store(bucket_name)
        assert bucket_name not in hook.store_names()


def _printed_json(stdout: str) -> Any:
    """What an ``airflow ... -o json`` command printed: its last line, the JSON. Airflow 3.2's
    stack logs alembic's plugin setup on stdout before it."""
    return json.loads(stdout.strip().splitlines()[-1])
