"""Every way natsobj can authenticate, against real servers configured for it; and refusals
that come back at once as PermissionDenied, never as a minute of silent reconnecting."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nkeys
import pytest

import natsobj
from natsobj import ConnectionSettings
from natsobj.local.embedded import NatsServerProcess
from tests.security.jwt_chain import OperatorChain, new_keypair
from tests.security.support import (
    PROMPT,
    assert_no_secret,
    exception_text,
    stopwatch,
    with_userinfo,
)

PASSWORD = "pw-7Hq2-secret"
TOKEN = "tok-Zr81-secret"
NKEY_USER = new_keypair(nkeys.PREFIX_BYTE_USER)
NKEY_SEED = NKEY_USER.seed.decode()


def round_trip(client: natsobj.Client, bucket: str) -> None:
    data = os.urandom(300_000)
    store = client.create_store(bucket)
    try:
        assert store.put("auth/check.bin", data).size == len(data)
        assert store.get_bytes("auth/check.bin") == data
    finally:
        client.delete_store(bucket)


def refused(settings: ConnectionSettings, secrets: list[str]) -> natsobj.PermissionDenied:
    """Connect with settings the server must refuse; the refusal is prompt and leaks nothing."""
    with stopwatch() as took, pytest.raises(natsobj.PermissionDenied) as err:
        natsobj.connect(settings)
    assert took.seconds < PROMPT, f"refusal took {took.seconds:.1f}s"
    assert "refused the credentials" in str(err.value)
    assert_no_secret(exception_text(err.value), secrets)
    return err.value


# -- user/password and nkey users --------------------------------------------------------------


@pytest.fixture(scope="module")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = (
        "authorization { users: [\n"
        f"  {{user: alice, password: {PASSWORD}}}\n"
        f"  {{nkey: {NKEY_USER.public_key.decode()}}}\n"
        "] }\n"
    )
    with NatsServerProcess(tmp_path_factory.mktemp("users"), config=config) as server:
        yield server


def test_user_and_password_from_the_url(users_server, bucket_name):
    with natsobj.connect(with_userinfo(users_server.url, f"alice:{PASSWORD}")) as client:
        round_trip(client, bucket_name)


def test_user_and_password_as_fields(users_server, bucket_name):
    settings = ConnectionSettings(servers=[users_server.url], user="alice", password=PASSWORD)
    with natsobj.connect(settings) as client:
        round_trip(client, bucket_name)


@pytest.mark.timeout(15)
def test_wrong_password_is_refused_at_once(users_server):
    error = refused(
        ConnectionSettings(servers=[users_server.url], user="alice", password="not-" + PASSWORD),
        ["not-" + PASSWORD],
    )
    assert "alice:***@" in str(error)  # which identity was refused, without its secret


@pytest.mark.timeout(15)
def test_missing_credentials_are_refused_at_once(users_server):
    refused(ConnectionSettings(servers=[users_server.url]), [])


@pytest.mark.parametrize("form", ["seed", "seed file"])
def test_nkey(users_server, bucket_name, tmp_path, form):
    seed = NKEY_SEED
    if form == "seed file":
        path = tmp_path / "user.nk"
        path.write_text(NKEY_SEED + "\n")
        path.chmod(0o600)
        seed = str(path)
    with natsobj.connect(users_server.url, nkey_seed=seed) as client:
        round_trip(client, bucket_name)


@pytest.mark.timeout(15)
def test_unknown_nkey_is_refused_at_once(users_server):
    stranger = new_keypair(nkeys.PREFIX_BYTE_USER).seed.decode()
    refused(ConnectionSettings(servers=[users_server.url], nkey_seed=stranger), [stranger])


@pytest.mark.timeout(15)
def test_malformed_nkey_seed_is_a_clear_error(users_server):
    bad_seed = "SUAMALFORMED" + "X" * 40
    with stopwatch() as took, pytest.raises(natsobj.NatsObjError) as err:
        natsobj.connect(users_server.url, nkey_seed=bad_seed)
    assert took.seconds < PROMPT
    assert "seed" in str(err.value).lower()
    assert_no_secret(exception_text(err.value), [bad_seed, bad_seed[:20]])


# -- token ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = f"authorization {{ token: {TOKEN} }}\n"
    with NatsServerProcess(tmp_path_factory.mktemp("token"), config=config) as server:
        yield server


def test_token_from_the_url(token_server, bucket_name):
    settings = ConnectionSettings.from_url(with_userinfo(token_server.url, TOKEN))
    assert settings.token == TOKEN and TOKEN not in repr(settings)
    with natsobj.connect(settings) as client:
        round_trip(client, bucket_name)


def test_token_as_a_field(token_server, bucket_name):
    with natsobj.connect(token_server.url, token=TOKEN) as client:
        round_trip(client, bucket_name)


@pytest.mark.timeout(15)
def test_wrong_token_is_refused_at_once(token_server):
    wrong = TOKEN[::-1]
    refused(ConnectionSettings(servers=[token_server.url], token=wrong), [wrong])


# -- decentralized JWT auth with a creds file ----------------------------------------------------


@pytest.fixture(scope="module")
def operator_chain() -> OperatorChain:
    return OperatorChain.build("STORE")


@pytest.fixture(scope="module")
def jwt_server(
    tmp_path_factory: pytest.TempPathFactory, operator_chain: OperatorChain
) -> Iterator[NatsServerProcess]:
    config = operator_chain.server_config()
    with NatsServerProcess(tmp_path_factory.mktemp("jwt"), config=config) as server:
        yield server


def test_creds_file(jwt_server, operator_chain, bucket_name, tmp_path):
    creds = operator_chain.user_creds("STORE", "pipeline", tmp_path)
    with natsobj.connect(jwt_server.url, creds_file=str(creds)) as client:
        round_trip(client, bucket_name)


def test_creds_file_from_the_environment(jwt_server, operator_chain, bucket_name, tmp_path):
    creds = operator_chain.user_creds("STORE", "from-env", tmp_path)
    settings = ConnectionSettings.from_env({"NATS_URL": jwt_server.url, "NATS_CREDS": str(creds)})
    with natsobj.connect(settings) as client:
        round_trip(client, bucket_name)


@pytest.mark.timeout(15)
def test_creds_of_an_unknown_operator_are_refused_at_once(jwt_server, tmp_path):
    impostor = OperatorChain.build("STORE").user_creds("STORE", "impostor", tmp_path)
    seed = impostor.read_text().split("-----BEGIN USER NKEY SEED-----\n")[1].split("\n")[0]
    refused(ConnectionSettings(servers=[jwt_server.url], creds_file=str(impostor)), [seed])


@pytest.mark.timeout(15)
def test_missing_creds_file_names_the_file(jwt_server, tmp_path):
    missing = tmp_path / "nowhere" / "user.creds"
    with stopwatch() as took, pytest.raises(natsobj.NatsObjError) as err:
        natsobj.connect(jwt_server.url, creds_file=str(missing))
    assert took.seconds < PROMPT
    assert str(missing) in str(err.value)


def test_creds_file_is_not_a_secret_but_its_contents_are(operator_chain, tmp_path):
    creds = operator_chain.user_creds("STORE", "shown", tmp_path)
    settings = ConnectionSettings(servers=["nats://127.0.0.1:4222"], creds_file=str(creds))
    assert str(creds) in repr(settings)  # the path helps debugging...
    seed_line = creds.read_text().split("-----BEGIN USER NKEY SEED-----\n")[1].split("\n")[0]
    assert_no_secret(repr(settings) + settings.redacted_url(), [seed_line])  # ...not the key
    assert Path(creds).stat().st_mode & 0o077 == 0
