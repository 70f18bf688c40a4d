"""TLS with a private CA and mutual TLS, with certificates generated for this run. A missing
or untrusted certificate is a prompt, clear NotConnected that says what to set."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import natsobj
from natsobj import ConnectionSettings
from natsobj.local.embedded import NatsServerProcess
from tests.security.pki import Pki
from tests.security.support import PROMPT, as_tls, stopwatch


def tls_block(pki: Pki, *, verify: bool) -> str:
    client_ca = f'  ca_file: "{pki.ca}"\n  verify: true\n' if verify else ""
    return (
        "tls {\n"
        f'  cert_file: "{pki.server.cert}"\n'
        f'  key_file: "{pki.server.key}"\n'
        f"{client_ca}"
        "  timeout: 2\n"
        "}\n"
    )


def round_trip(settings: ConnectionSettings, bucket: str) -> None:
    data = os.urandom(200_000)
    with natsobj.connect(settings) as client:
        store = client.create_store(bucket)
        store.put("tls/check.bin", data)
        assert store.get_bytes("tls/check.bin") == data
        client.delete_store(bucket)


def refused(settings: ConnectionSettings) -> natsobj.NotConnected:
    with stopwatch() as took, pytest.raises(natsobj.NotConnected) as err:
        natsobj.connect(settings)
    assert took.seconds < PROMPT, f"refusal took {took.seconds:.1f}s"
    return err.value


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, pki) -> Iterator[NatsServerProcess]:
    config = tls_block(pki, verify=False)
    with NatsServerProcess(tmp_path_factory.mktemp("tls"), config=config) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory, pki) -> Iterator[NatsServerProcess]:
    config = tls_block(pki, verify=True)
    with NatsServerProcess(tmp_path_factory.mktemp("mtls"), config=config) as server:
        yield server


def client_settings(server: NatsServerProcess, **tls: object) -> ConnectionSettings:
    return ConnectionSettings(servers=[as_tls(server.url)], connect_timeout=2, **tls)


# -- server-side TLS with a private CA -----------------------------------------------------------


def test_tls_with_a_private_ca(tls_server, pki, bucket_name):
    round_trip(client_settings(tls_server, tls_ca=str(pki.ca)), bucket_name)


def test_a_nats_url_upgrades_to_tls_when_a_ca_is_given(tls_server, pki, bucket_name):
    settings = ConnectionSettings(servers=[tls_server.url], tls_ca=str(pki.ca))
    round_trip(settings, bucket_name)


def test_tls_ca_from_the_environment(tls_server, pki, bucket_name):
    settings = ConnectionSettings.from_env(
        {"NATS_URL": as_tls(tls_server.url), "NATS_CA": str(pki.ca)}
    )
    round_trip(settings, bucket_name)


@pytest.mark.timeout(15)
def test_server_certificate_from_an_unknown_ca_is_refused(tls_server, foreign_pki):
    error = refused(client_settings(tls_server, tls_ca=str(foreign_pki.ca)))
    assert "certificate" in str(error)
    assert "tls_ca" in str(error)  # says what to set


@pytest.mark.timeout(15)
def test_private_ca_without_tls_ca_is_refused(tls_server, pki):
    """The system trust store does not know a private CA: no silent fallback to plain text."""
    error = refused(client_settings(tls_server))
    assert "certificate" in str(error)


# -- mutual TLS ----------------------------------------------------------------------------------


def test_mutual_tls(mtls_server, pki, bucket_name):
    settings = client_settings(
        mtls_server,
        tls_ca=str(pki.ca),
        tls_cert=str(pki.client.cert),
        tls_key=str(pki.client.key),
    )
    round_trip(settings, bucket_name)


def test_mutual_tls_from_the_environment(mtls_server, pki, bucket_name):
    env = {
        "NATS_URL": as_tls(mtls_server.url),
        "NATS_CA": str(pki.ca),
        "NATS_CERT": str(pki.client.cert),
        "NATS_KEY": str(pki.client.key),
    }
    round_trip(ConnectionSettings.from_env(env), bucket_name)


@pytest.mark.timeout(15)
def test_mutual_tls_without_a_client_certificate_is_refused(mtls_server, pki):
    error = refused(client_settings(mtls_server, tls_ca=str(pki.ca)))
    assert "certificate" in str(error).lower()


@pytest.mark.timeout(15)
def test_client_certificate_from_another_ca_is_refused(mtls_server, pki, foreign_pki):
    settings = client_settings(
        mtls_server,
        tls_ca=str(pki.ca),
        tls_cert=str(foreign_pki.client.cert),
        tls_key=str(foreign_pki.client.key),
    )
    error = refused(settings)
    assert "certificate" in str(error).lower() or "unknown ca" in str(error).lower()


@pytest.mark.timeout(15)
def test_untrusted_server_ca_is_refused_under_mutual_tls(mtls_server, pki, foreign_pki):
    settings = client_settings(
        mtls_server,
        tls_ca=str(foreign_pki.ca),
        tls_cert=str(pki.client.cert),
        tls_key=str(pki.client.key),
    )
    error = refused(settings)
    assert "tls_ca" in str(error)
