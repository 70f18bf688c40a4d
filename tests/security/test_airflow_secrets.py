"""The Airflow provider's secrets: every connection field that carries a secret is a password
input, is redacted where Airflow shows connections (API/UI, task logs), and a failed
``test_connection`` names the connection without its credentials.

Airflow is imported inside the tests: it reads its configuration on first import, and
tests/airflow/conftest.py sets that environment up when the whole suite runs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from natsobj.local.embedded import NatsServerProcess
from natsobj.settings import SECRET_FIELDS
from tests.security.support import assert_no_secret

SENTINEL = "sentinel-Vb73-secret"
PASSWORD = "pw-Xt28-secret"


@pytest.fixture(scope="module", autouse=True)
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A throw-away AIRFLOW_HOME when this module runs without tests/airflow."""
    if "AIRFLOW_HOME" not in os.environ:
        os.environ["AIRFLOW_HOME"] = str(tmp_path_factory.mktemp("airflow-home"))
        os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


def connection(extra: dict[str, Any]) -> Any:
    from airflow.sdk import Connection

    return Connection(
        conn_id="nats_security",
        conn_type="nats",
        host="nats://127.0.0.1:4222",
        extra=json.dumps(extra),
    )


def secret_conn_fields() -> list[str]:
    """Connection form fields whose value ends up in a secret ConnectionSettings field."""
    from airflow_natsobj.connection import settings_from_connection
    from airflow_natsobj.get_provider_info import CONN_FIELDS

    secret = []
    for name in CONN_FIELDS:
        try:
            settings = settings_from_connection(connection({name: SENTINEL}))
        except ValueError:
            continue  # a field that does not take free text
        if any(getattr(settings, field) == SENTINEL for field in SECRET_FIELDS):
            secret.append(name)
    return secret


def test_the_token_and_nkey_seed_have_connection_fields():
    from airflow_natsobj.connection import settings_from_connection

    fields = secret_conn_fields()
    assert len(fields) >= 2, fields
    values = {name: f"{SENTINEL}-{i}" for i, name in enumerate(fields)}
    settings = settings_from_connection(connection(values))
    assert {settings.token, settings.nkey_seed} <= set(values.values())


def test_secret_fields_are_password_inputs():
    from airflow_natsobj.get_provider_info import CONN_FIELDS

    for name in secret_conn_fields():
        assert CONN_FIELDS[name]["schema"].get("format") == "password", name


def test_airflow_redacts_every_secret_field_where_it_shows_connections():
    """The connection API (what the UI's connection list and edit form display) and the task
    log masker redact extras by key name, so each secret field needs a name Airflow hides."""
    from airflow._shared.secrets_masker import redact, should_hide_value_for_key
    from airflow.api_fastapi.core_api.datamodels.connections import ConnectionResponse

    fields = secret_conn_fields()
    extra = {name: f"{SENTINEL}-{name}" for name in fields}
    response = ConnectionResponse(
        connection_id="nats_security",
        conn_type="nats",
        description=None,
        host="nats://127.0.0.1:4222",
        login="alice",
        schema=None,
        port=None,
        password=PASSWORD,
        extra=json.dumps(extra),
        team_name=None,
    )
    shown = response.model_dump_json() + json.dumps(redact(extra))
    hidden_by_name = {name: should_hide_value_for_key(name) for name in fields}
    assert all(hidden_by_name.values()), f"Airflow shows these in plain text: {hidden_by_name}"
    assert_no_secret(shown, [PASSWORD, *extra.values()])


@pytest.fixture(scope="module")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = f"authorization {{ users: [ {{user: alice, password: {PASSWORD}}} ] }}\n"
    with NatsServerProcess(tmp_path_factory.mktemp("airflow-auth"), config=config) as server:
        yield server


@pytest.mark.timeout(30)
def test_failed_test_connection_names_the_user_not_the_password(users_server, monkeypatch):
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

    wrong = "x" + PASSWORD
    connection = {
        "conn_type": "nats",
        "host": users_server.url,
        "login": "alice",
        "password": wrong,
        "extra": {"connect_timeout": 2},
    }
    monkeypatch.setenv("AIRFLOW_CONN_NATS_SECURITY", json.dumps(connection))
    hook = NatsObjectStoreHook("nats_security")
    ok, message = hook.test_connection()
    assert ok is False
    assert "alice:***@" in message
    assert_no_secret(message + repr(hook.settings) + hook.settings.redacted_url(), [wrong])
