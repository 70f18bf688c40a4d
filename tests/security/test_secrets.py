"""Secrets (passwords, tokens, nkey seeds) stay out of reprs, printable URLs, exceptions,
log records and CLI output, however they were given."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import nkeys
import pytest
from click.testing import CliRunner

import natsobj
from natsobj import ConnectionSettings
from natsobj.cli import cli
from natsobj.cli.exits import ExitCode
from natsobj.local.embedded import NatsServerProcess
from tests.security.jwt_chain import new_keypair
from tests.security.support import assert_no_secret, exception_text, with_userinfo
from tests.security.test_airflow_secrets import airflow_home  # noqa: F401 (an autouse fixture)

PASSWORD = "pw-Qe93-secret"
TOKEN = "tok-Lm41-secret"
SEED = new_keypair(nkeys.PREFIX_BYTE_USER).seed.decode()
SECRETS = [PASSWORD, TOKEN, SEED]


def shown(settings: ConnectionSettings) -> str:
    return repr(settings) + str(settings) + settings.redacted_url() + f"{settings}"


@pytest.mark.parametrize(
    "settings",
    [
        ConnectionSettings(
            servers=["nats://127.0.0.1:4222"],
            user="alice",
            password=PASSWORD,
            token=TOKEN,
            nkey_seed=SEED,
        ),
        ConnectionSettings.from_url(f"nats://alice:{PASSWORD}@127.0.0.1:4222"),
        ConnectionSettings.from_url(f"tls://{TOKEN}@h1:4222,h2:4222?domain=hub"),
        ConnectionSettings.from_url(
            f"nats://127.0.0.1:4222?user=alice&password={PASSWORD}&nkey_seed={SEED}"
        ),
        ConnectionSettings.from_env(
            {
                "NATS_URL": "nats://127.0.0.1:4222",
                "NATS_PASSWORD": PASSWORD,
                "NATS_TOKEN": TOKEN,
                "NATS_NKEY_SEED": SEED,
                "NATS_USER": "alice",
            }
        ),
        ConnectionSettings.coerce(f"nats://alice:{PASSWORD}@127.0.0.1:4222", token=TOKEN),
    ],
    ids=["fields", "url-userinfo", "url-token", "url-query", "environment", "coerce"],
)
def test_settings_never_print_secrets(settings):
    assert_no_secret(shown(settings), SECRETS)
    assert "127.0.0.1" in shown(settings) or "h1" in shown(settings)


@pytest.mark.parametrize(
    "servers",
    [
        f"nats://alice:{PASSWORD}@127.0.0.1:4222",
        [f"tls://alice:{PASSWORD}@h1:4222", f"tls://alice:{PASSWORD}@h2:4222"],
        f"nats://{TOKEN}@h1:4222,nats://{TOKEN}@h2:4222",
    ],
    ids=["one-url", "url-list", "comma-separated"],
)
def test_credentials_inside_server_urls_are_redacted(servers):
    """Server lists are handed over as they are by the Airflow connection's 'servers' extra
    and by Dagster/Spark options, so credentials in them must be treated as secrets too."""
    settings = ConnectionSettings(servers=servers)
    assert_no_secret(shown(settings), SECRETS)


def test_bad_url_options_do_not_echo_the_url():
    with pytest.raises(ValueError) as err:
        ConnectionSettings.from_url(f"nats://alice:{PASSWORD}@h:4222?colour=blue&token={TOKEN}")
    assert "colour" in str(err.value)
    assert_no_secret(exception_text(err.value), SECRETS)


# -- against a real server: failed connects and permission errors -------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = (
        "authorization { users: [\n"
        f"  {{user: alice, password: {PASSWORD}, permissions: {{"
        ' publish: {allow: ["$JS.API.STREAM.INFO.OBJ_mine"]},'
        ' subscribe: {allow: ["_INBOX.>"]} }}\n'
        "] }\n"
    )
    with NatsServerProcess(tmp_path_factory.mktemp("secrets"), config=config) as server:
        yield server


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "credentials",
    [
        {"user": "alice", "password": "x" + PASSWORD},
        {"token": "x" + TOKEN},
        {"nkey_seed": SEED},
        {"nkey_seed": SEED[:-4] + "AAAA"},  # not a valid seed at all
    ],
    ids=["password", "token", "nkey", "malformed-nkey"],
)
def test_failed_connect_logs_and_raises_without_secrets(server, caplog, credentials):
    caplog.set_level(logging.DEBUG)
    secrets = [*SECRETS, *(v for k, v in credentials.items() if k != "user")]
    with pytest.raises(natsobj.NatsObjError) as err:
        natsobj.connect(server.url, connect_timeout=2, **credentials)
    assert_no_secret(exception_text(err.value), secrets)
    assert_no_secret(caplog.text, secrets)
    for record in caplog.records:
        assert_no_secret(repr(record.args) + repr(record.__dict__), secrets)


def test_permission_error_logs_without_secrets(server, caplog):
    caplog.set_level(logging.DEBUG)
    with (
        natsobj.connect(with_userinfo(server.url, f"alice:{PASSWORD}")) as client,
        pytest.raises(natsobj.PermissionDenied) as err,
    ):
        client.store("theirs")
    assert_no_secret(exception_text(err.value) + repr(client), SECRETS)
    assert any("ermission" in r.getMessage() for r in caplog.records)
    assert_no_secret(caplog.text, SECRETS)
    for record in caplog.records:
        assert_no_secret(repr(record.args) + repr(record.__dict__), SECRETS)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("debug", [[], ["--debug"]], ids=["plain", "debug"])
def test_cli_failure_output_has_no_secrets(server, debug):
    wrong = "x" + PASSWORD
    result = CliRunner().invoke(
        cli,
        ["--url", with_userinfo(server.url, f"alice:{wrong}"), "--timeout", "2", *debug, "stores"],
    )
    assert result.exit_code == ExitCode.CONNECTION, result.output  # connection or permission
    assert "alice" in result.output  # the error says who was refused...
    assert_no_secret(result.output + repr(result.exception), [wrong, PASSWORD])  # ...not how


# -- a token with a raw "?" (the old parser took the text before it for a host name) -------------

TOKEN_HEAD, TOKEN_TAIL = "tokhead-Rw58", "toktail-Jc06"
RAW_TOKEN = f"{TOKEN_HEAD}?{TOKEN_TAIL}"


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = f'authorization {{ token: "{RAW_TOKEN}" }}\n'
    with NatsServerProcess(tmp_path_factory.mktemp("token"), config=config) as server:
        yield server


def test_a_raw_question_mark_in_a_token_is_part_of_the_token(token_server):
    with natsobj.connect(with_userinfo(token_server.url, RAW_TOKEN)) as client:
        assert client.store_names() == []


@pytest.mark.timeout(20)
def test_cli_never_prints_a_token_or_a_piece_of_it(token_server):
    wrong = f"{TOKEN_HEAD}x?{TOKEN_TAIL}"
    url = ",".join([with_userinfo(token_server.url, wrong)] * 2)
    result = CliRunner().invoke(cli, ["--url", url, "--timeout", "2", "stores"])
    assert result.exit_code == ExitCode.CONNECTION, result.output
    assert_no_secret(result.output + repr(result.exception), [TOKEN_HEAD, TOKEN_TAIL])


@pytest.mark.timeout(30)
def test_airflow_connection_test_never_prints_a_token(token_server, monkeypatch):
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

    wrong = f"{TOKEN_HEAD}x?{TOKEN_TAIL}"
    connection = {
        "conn_type": "nats",
        "host": with_userinfo(token_server.url, wrong),
        "extra": {"connect_timeout": 2},
    }
    monkeypatch.setenv("AIRFLOW_CONN_NATS_TOKEN", json.dumps(connection))
    hook = NatsObjectStoreHook("nats_token")
    ok, message = hook.test_connection()
    assert ok is False
    assert_no_secret(message + repr(hook.settings), [TOKEN_HEAD, TOKEN_TAIL])


def test_settings_redact_secrets_from_wrapped_messages():
    settings = ConnectionSettings.from_url(f"nats://{TOKEN}@h:4222", password="p w/1")
    text = settings.redact(f"failed with {TOKEN} and p w/1 and p%20w%2F1")
    assert_no_secret(text, [TOKEN, "p w/1", "p%20w%2F1"])
