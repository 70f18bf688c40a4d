"""Bad configuration fails early and says what to fix; secrets stay out of config displays."""

from __future__ import annotations

import pytest
from dagster import (
    AssetKey,
    Definitions,
    EnvVar,
    asset,
    build_input_context,
    build_output_context,
    materialize,
    mem_io_manager,
    serialize_value,
)
from dagster._core.remote_representation.external_data import RepositorySnap

from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource
from natsobj.errors import BucketNotFound, NotConnected
from natsobj.settings import RUNNING_EMBEDDED


def test_unknown_bucket_with_creation_off_names_the_bucket(nats_resource, bucket_name):
    manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, create_bucket=False
    )
    with (
        build_output_context(asset_key=AssetKey("a"), name="result") as ctx,
        pytest.raises(BucketNotFound) as err,
    ):
        manager.handle_output(ctx, b"x")
    assert err.value.bucket == bucket_name
    assert "create_bucket=True" in str(err.value) and f"natsobj store create {bucket_name}" in str(
        err.value
    )
    with nats_resource.get_client() as client:
        assert bucket_name not in client.store_names()  # nothing was created


def test_bucket_is_created_when_missing(nats_resource, io_manager, sync_client):
    with build_output_context(asset_key=AssetKey("a"), name="result") as ctx:
        io_manager.handle_output(ctx, b"x")
    assert sync_client.store(io_manager.bucket).get_bytes("pipe/a") == b"x"


@pytest.mark.parametrize(
    ("url", "error", "text"),
    [
        ("nats://127.0.0.1:4222?colour=blue", ValueError, "unknown NATS URL option 'colour'"),
        ("nats://127.0.0.1:notaport", NotConnected, "cannot connect to nats://127.0.0.1:notaport"),
    ],
)
def test_bad_url_gives_a_clear_error(url, error, text):
    @asset
    def thing() -> bytes:
        return b"x"

    manager = NatsObjectStoreIOManager(resource=NatsObjectStoreResource(url=url))
    with pytest.raises(error, match=text):
        materialize([thing], resources={"io_manager": manager})


def test_resource_fields_override_the_url(nats_url, monkeypatch):
    resource = NatsObjectStoreResource(
        url=f"{nats_url}?domain=hub", user="u", password="p", connect_timeout=2
    )
    settings = resource.settings()
    assert settings.servers == [nats_url]
    assert (settings.domain, settings.user, settings.password) == ("hub", "u", "p")
    assert settings.connect_timeout == 2.0
    # no url: NATS_URL, else the embedded server already running here, never a new one
    monkeypatch.delenv("NATS_URL", raising=False)
    assert NatsObjectStoreResource().settings().servers == [RUNNING_EMBEDDED]
    monkeypatch.setenv("NATS_URL", nats_url)
    assert NatsObjectStoreResource().settings().servers == [nats_url]


def test_a_misspelt_field_is_refused_naming_the_fields() -> None:
    with pytest.raises(ValueError, match=r"unknown field .*'server'.*known: .*\burl\b"):
        NatsObjectStoreResource(server="nats://elsewhere:4222")


def test_secrets_from_env_vars_stay_out_of_config_and_repr(monkeypatch, nats_url):
    monkeypatch.setenv("TEST_NATS_PASSWORD", "s3cret-pw")
    monkeypatch.setenv("TEST_NATS_TOKEN", "s3cret-token")
    resource = NatsObjectStoreResource(
        url=nats_url, password=EnvVar("TEST_NATS_PASSWORD"), token=EnvVar("TEST_NATS_TOKEN")
    )
    defs = Definitions(resources={"nats": resource})
    # The repository snapshot is what the webserver shows on its Resources page.
    ui_snapshot = serialize_value(RepositorySnap.from_def(defs.get_repository_def()))
    assert "TEST_NATS_PASSWORD" in ui_snapshot
    shown = ui_snapshot + repr(resource) + repr(resource.settings())
    assert "s3cret" not in shown
    # ...while the resolved values reach the connection settings, at run time and directly.
    assert resource.settings().password == "s3cret-pw"

    @asset
    def seen(nats: NatsObjectStoreResource) -> str:
        return nats.settings().token

    result = materialize([seen], resources={"nats": resource, "io_manager": mem_io_manager})
    assert result.output_for_node("seen") == "s3cret-token"
    # What the UI shows of the run: its config and the job snapshot with resource defaults.
    run = result.dagster_run
    job_snapshot = serialize_value(result.job_def.get_job_snapshot())
    assert "s3cret" not in str(run.run_config) + job_snapshot
    assert "TEST_NATS_TOKEN" in job_snapshot


def test_loading_from_a_bucket_that_never_existed_says_so(nats_resource, bucket_name):
    manager = NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name)
    with (
        build_input_context(asset_key=AssetKey("a")) as ctx,
        pytest.raises(BucketNotFound, match="materialize the upstream asset first") as err,
    ):
        manager.load_input(ctx)
    assert err.value.bucket == bucket_name


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"replica": "3"}, "unknown store setting 'replica'; known: .*'replicas'"),
        ({"ttl": "soon"}, "store setting 'ttl'"),
        ({"placement": "ssd"}, "'placement': must be a JSON object"),
    ],
)
def test_bad_bucket_settings_fail_when_the_resource_is_configured(nats_url, settings, says):
    with pytest.raises(ValueError, match=says):
        NatsObjectStoreResource(url=nats_url, bucket_settings=settings)
