"""Every row of the two tables reaches every face (issue 24): each ``ConnectionSettings`` field
(``natsobj.settings.SETTINGS``) through the async client, the blocking facade, the CLI, the
Airflow hook and operators, the Dagster resource, the fsspec filesystem and Spark's options;
each ``StoreConfig`` setting (``natsobj.store_config.STORE_SETTINGS``) through every face that
creates buckets. The cases are generated from the tables, so a row added there is tested on
every face or fails here until a face takes it.

Connection fields are checked one at a time (``domain`` and ``api_prefix`` exclude each other)
against a real TLS server that wants client certificates, so the TLS fields are real files the
connection uses; the faces that connect do so, and every face's resulting ``ConnectionSettings``
must carry the value given."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import nkeys
import pytest
from click.testing import CliRunner

import natsobj
import natsobj.settings
from natsobj import aio
from natsobj.cli.app import cli
from natsobj.cli.connection_flags import SPELLINGS, spelling
from natsobj.local.embedded import NatsServerProcess
from natsobj.parsing import format_duration
from natsobj.settings import OPTION_FIELDS, SETTINGS, URL_FIELD, ConnectionSettings, Setting
from natsobj.store_config import STORE_SETTINGS, Placement, StoreConfig
from tests.raw import RawJetStream
from tests.security.jwt_chain import creds_text, encode_jwt, new_keypair
from tests.security.pki import Pki, make_pki

FIELDS = list(SETTINGS)
TLS_FIELDS = ("tls_ca", "tls_cert", "tls_key")


@pytest.fixture(scope="module", autouse=True)
def airflow_home() -> None:
    """A throw-away AIRFLOW_HOME when this module runs without tests/airflow."""
    if "AIRFLOW_HOME" not in os.environ:
        os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="natsobj-one-table-airflow-")
        os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("one-table-pki"))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[str]:
    config = (
        f'tls {{\n  cert_file: "{pki.server.cert}"\n  key_file: "{pki.server.key}"\n'
        f'  ca_file: "{pki.ca}"\n  verify: true\n  timeout: 2\n}}\n'
    )
    with NatsServerProcess(tmp_path_factory.mktemp("one-table-tls"), config=config) as server:
        yield server.url.replace("nats://", "tls://")


@pytest.fixture(scope="module")
def companions(pki: Pki) -> dict[str, str]:
    """The client certificate every connection to the TLS server needs."""
    return {"tls_ca": str(pki.ca), "tls_cert": str(pki.client.cert), "tls_key": str(pki.client.key)}


@pytest.fixture(scope="module")
def values(tls_server: str, companions: dict[str, str], tmp_path_factory) -> dict[str, Any]:
    """A value for each field, other than its default, that the server accepts: real key
    material for the fields that name files or keys, the next choice, a number, off."""
    directory = tmp_path_factory.mktemp("one-table-values")
    user = new_keypair(nkeys.PREFIX_BYTE_USER)
    account = new_keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    jwt = encode_jwt(account, user.public_key.decode(), "one-table", {"type": "user"})
    creds = directory / "user.creds"
    creds.write_text(creds_text(jwt, user.seed.decode()))
    material = {
        URL_FIELD: tls_server,
        "nkey_seed": new_keypair(nkeys.PREFIX_BYTE_USER).seed.decode(),
        "creds_file": str(creds),
        "cache_dir": str(directory / "cache"),
        "gateway_url": "http://127.0.0.1:9000",
        **companions,
    }
    chosen: dict[str, Any] = {}
    for name, row in SETTINGS.items():
        if name in material:
            chosen[name] = material[name]
        elif row.choices:
            chosen[name] = row.choices[-1]
        elif row.kind is float:
            chosen[name] = 7.5
        elif row.kind is bool:
            chosen[name] = False
        else:
            chosen[name] = f"{name.replace('_', '-')}-1"
    defaults = ConnectionSettings(servers=["nats://127.0.0.1:4222"])
    assert all(chosen[n] != getattr(defaults, n) for n in FIELDS if n != URL_FIELD), chosen
    return chosen


def expected(name: str, value: Any) -> Any:
    if name == URL_FIELD:
        return [value]
    return SETTINGS[name].kind(value) if SETTINGS[name].kind is float else value


def as_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def given(name: str, values: dict[str, Any], companions: dict[str, str]) -> dict[str, Any]:
    """The field under test on top of the TLS companions, as keyword overrides."""
    return {**companions, name: values[name]} if name != URL_FIELD else dict(companions)


def check(settings: ConnectionSettings, name: str, values: dict[str, Any]) -> None:
    assert getattr(settings, name) == expected(name, values[name]), (name, settings)


# -- connection fields ------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIELDS)
def test_async_client(name, values, companions) -> None:
    async def connect() -> ConnectionSettings:
        client = await aio.connect(values[URL_FIELD], **given(name, values, companions))
        try:
            return client.settings
        finally:
            await client.close()

    check(asyncio.run(connect()), name, values)


@pytest.mark.parametrize("name", FIELDS)
def test_blocking_facade(name, values, companions) -> None:
    with natsobj.connect(values[URL_FIELD], **given(name, values, companions)) as client:
        check(client.settings, name, values)


def cli_args(name: str, value: Any) -> list[str]:
    """The CLI's own rendering of a field: its flag from the table (a switch for a bool)."""
    flag = spelling(name).flags[0]
    if SETTINGS[name].kind is bool:
        return [flag if value else f"--no-{flag[2:]}"]
    return [flag, as_text(value)]


@pytest.mark.parametrize("name", FIELDS)
def test_cli(name, values, companions, monkeypatch) -> None:
    for var in ("NATS_URL", *(row.env for row in SETTINGS.values() if row.env)):
        monkeypatch.delenv(var, raising=False)
    args = cli_args(URL_FIELD, values[URL_FIELD])
    for field, value in given(name, values, companions).items():
        args += cli_args(field, value)
    # The root command's own parsing and callback, then its session's client (which connects).
    with cli.make_context("natsobj", [*args, "stores"]) as ctx:
        ctx.invoke(cli.callback, **ctx.params)
        check(ctx.obj.client().settings, name, values)


def airflow_connection(name: str, values: dict[str, Any], companions: dict[str, str]) -> str:
    """A connection as Airflow stores it: the servers in Host, the user and password in Login
    and Password, every other field in the extra the provider names for it."""
    from airflow_natsobj.connection import SETTINGS_EXTRAS

    extras_for = {field: extra for extra, field in SETTINGS_EXTRAS.items()}
    fields = {**given(name, values, companions)}
    doc: dict[str, Any] = {"conn_type": "nats", "host": values[URL_FIELD], "extra": {}}
    if "user" in fields or "password" in fields:
        doc["login"] = fields.pop("user", "someone")
        doc["password"] = fields.pop("password", None)
    for field, value in fields.items():
        doc["extra"][extras_for[field]] = value
    return json.dumps(doc)


def test_the_cli_spells_only_fields_of_the_table() -> None:
    """The CLI's flags and metavars are its own table, keyed by field: a key that is no field
    would spell nothing."""
    assert set(SPELLINGS) <= set(SETTINGS)


def test_the_core_table_names_no_cli_flag() -> None:
    """How the CLI spells a setting is the CLI's (as found: ``cli=("--url", "-s")`` and
    metavars in the core's rows): no string in natsobj/settings.py is a command-line flag."""
    tree = ast.parse(inspect.getsource(natsobj.settings))
    flags = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"--?[a-z][a-z-]*", node.value)
    ]
    assert flags == []
    assert not {"cli", "metavar"} & {f.name for f in dataclasses.fields(Setting)}


def test_airflow_extras_cover_the_table() -> None:
    from airflow_natsobj.connection import FROM_CONNECTION_FIELDS, SETTINGS_EXTRAS
    from airflow_natsobj.get_provider_info import CONN_FIELDS

    assert set(SETTINGS_EXTRAS.values()) | set(FROM_CONNECTION_FIELDS) == set(SETTINGS)
    assert set(SETTINGS_EXTRAS) <= set(CONN_FIELDS)


@pytest.mark.parametrize("name", FIELDS)
def test_airflow_hook_and_operators(name, values, companions, monkeypatch) -> None:
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
    from airflow_natsobj.operators.object_store import (
        NatsCreateObjectOperator,
        NatsCreateObjectStoreOperator,
        NatsDeleteObjectsOperator,
        NatsDeleteObjectStoreOperator,
        NatsGetObjectOperator,
    )

    monkeypatch.setenv("AIRFLOW_CONN_NATS_ONE_TABLE", airflow_connection(name, values, companions))
    hook = NatsObjectStoreHook("nats_one_table")
    check(hook.settings, name, values)
    conn = {"nats_conn_id": "nats_one_table", "bucket": "b"}
    operators = [
        NatsCreateObjectOperator(task_id="p", name="o", data=b"x", **conn),
        NatsGetObjectOperator(task_id="g", name="o", **conn),
        NatsDeleteObjectsOperator(task_id="d", name="o", **conn),
        NatsCreateObjectStoreOperator(task_id="c", **conn),
        NatsDeleteObjectStoreOperator(task_id="r", **conn),
    ]
    for operator in operators:
        check(operator.hook().settings, name, values)


@pytest.mark.parametrize("name", FIELDS)
def test_dagster_resource(name, values, companions) -> None:
    from dagster_natsobj.resource import NatsObjectStoreResource

    resource = NatsObjectStoreResource(url=values[URL_FIELD], **given(name, values, companions))
    check(resource.settings(), name, values)


def test_dagster_resource_fields_are_the_table() -> None:
    from dagster_natsobj.resource import (
        BUCKET_SETTINGS_CONFIG,
        URL_CONFIG,
        NatsObjectStoreResource,
    )

    fields = set(NatsObjectStoreResource.model_fields)
    connection = {URL_CONFIG, *(n for n in SETTINGS if n != URL_FIELD)}
    assert fields == connection | {BUCKET_SETTINGS_CONFIG}


OPTIONS = sorted({*OPTION_FIELDS, URL_FIELD})


def option_field(option: str) -> str:
    return URL_FIELD if option == URL_FIELD else OPTION_FIELDS[option]


@pytest.mark.parametrize("option", OPTIONS)
def test_filesystem(option, values, companions) -> None:
    from natsobj.fs import NatsObjectFileSystem

    name = option_field(option)
    options = {**companions, option: values[name]}
    if name != URL_FIELD:
        options["url"] = values[URL_FIELD]
    fs = NatsObjectFileSystem(skip_instance_cache=True, **options)
    check(fs.settings, name, values)


@pytest.mark.parametrize("option", sorted({*OPTION_FIELDS, "url"}))
def test_spark_options(option, values, companions) -> None:
    from natsobj.spark.options import SourceOptions

    name = URL_FIELD if option == "url" else OPTION_FIELDS[option]
    options = {"bucket": "b", "prefix": "p", "url": values[URL_FIELD], **companions}
    options[option] = values[name]
    parsed = SourceOptions.parse({k: as_text(v) for k, v in options.items()})
    check(parsed.settings, name, values)


# -- store settings ---------------------------------------------------------------------------

STORE_VALUES: dict[str, Any] = {
    "description": "one table",
    "metadata": {"owner": "one-table"},
    "ttl": timedelta(hours=1),
    "max_bytes": 1 << 20,
    "storage": "memory",
    "replicas": 1,
    "placement": Placement(tags=("ssd",)),
    "compression": True,
    "allow_msg_ttl": True,
    "delete_marker_ttl": timedelta(minutes=5),
}
# How each setting is written on the CLI's store create (a setting missing here fails below).
STORE_CLI: dict[str, list[str]] = {
    "description": ["--description", "one table"],
    "metadata": ["--metadata", "owner=one-table"],
    "ttl": ["--ttl", "3600"],
    "max_bytes": ["--max-bytes", str(1 << 20)],
    "storage": ["--storage", "memory"],
    "replicas": ["--replicas", "1"],
    "placement": ["--placement-tags", "ssd"],
    "compression": ["--compression"],
    "allow_msg_ttl": ["--allow-msg-ttl"],
    "delete_marker_ttl": ["--delete-marker-ttl", "5m"],
}


def test_the_store_values_cover_the_table() -> None:
    assert set(STORE_VALUES) == set(STORE_SETTINGS) == set(STORE_CLI)
    defaults = StoreConfig("b")
    moved = [n for n in STORE_SETTINGS if STORE_VALUES[n] != getattr(defaults, n)]
    assert set(STORE_SETTINGS) - set(moved) == {"replicas"}  # one server: one replica


@pytest.fixture(scope="module")
def tagged_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with tags, so a placement by tag has somewhere to go."""
    config = 'server_name: one-table\nserver_tags: ["ssd"]\n'
    with NatsServerProcess(tmp_path_factory.mktemp("one-table-tags"), config=config) as server:
        yield server.url


def assert_created_with_every_setting(url: str, bucket: str) -> None:
    raw = RawJetStream(url)
    try:
        config = StoreConfig.from_stream_config(bucket, raw.stream_config(bucket))
    finally:
        raw.close()
    assert config == StoreConfig(bucket, **STORE_VALUES)


def test_store_settings_async_client(tagged_server, bucket_name) -> None:
    async def create() -> None:
        async with await aio.connect(tagged_server) as client:
            await client.create_store(bucket_name, **STORE_VALUES)

    asyncio.run(create())
    assert_created_with_every_setting(tagged_server, bucket_name)


def test_store_settings_blocking_facade(tagged_server, bucket_name) -> None:
    with natsobj.connect(tagged_server) as client:
        client.create_store(bucket_name, **STORE_VALUES)
    assert_created_with_every_setting(tagged_server, bucket_name)


def test_store_settings_cli(tagged_server, bucket_name) -> None:
    args = ["--url", tagged_server, "store", "create", bucket_name]
    for name in STORE_SETTINGS:
        args += STORE_CLI[name]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert_created_with_every_setting(tagged_server, bucket_name)


def test_store_settings_airflow_hook_and_operator(tagged_server, bucket_name, monkeypatch):
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
    from airflow_natsobj.operators.object_store import NatsCreateObjectStoreOperator

    monkeypatch.setenv(
        "AIRFLOW_CONN_NATS_TAGGED", json.dumps({"conn_type": "nats", "host": tagged_server})
    )
    NatsObjectStoreHook("nats_tagged").create_store(bucket_name, **STORE_VALUES)
    assert_created_with_every_setting(tagged_server, bucket_name)
    # The operator's settings are templated fields: give them as text, as a template renders.
    templated = {
        **STORE_VALUES,
        "ttl": "3600",
        "compression": "true",
        "max_bytes": "1048576",
        "allow_msg_ttl": "true",
        "delete_marker_ttl": "300",
    }
    operator = NatsCreateObjectStoreOperator(
        task_id="c", bucket=bucket_name + "op", nats_conn_id="nats_tagged", **templated
    )
    operator.execute(context={})  # type: ignore[arg-type]
    assert_created_with_every_setting(tagged_server, bucket_name + "op")


def test_store_settings_filesystem(tagged_server, bucket_name) -> None:
    from natsobj.fs import NatsObjectFileSystem

    fs = NatsObjectFileSystem(tagged_server, skip_instance_cache=True)
    fs.mkdir(bucket_name, **STORE_VALUES)
    assert_created_with_every_setting(tagged_server, bucket_name)


def store_text(value: Any) -> str:
    """A store setting as the faces configured by text take it (Spark options, a Dagster
    resource's config); a value of a kind not handled here fails the tests below until
    ``StoreConfig.from_options`` and this are taught it."""
    if isinstance(value, Placement):
        return json.dumps(value.as_dict())
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, bool | int | str):
        return as_text(value)
    raise AssertionError(f"no text form for store setting value {value!r}")


STORE_TEXT = {name: store_text(value) for name, value in STORE_VALUES.items()}


def test_store_settings_spark_options(tagged_server, bucket_name) -> None:
    from natsobj.spark.options import BUCKET_OPTION_PREFIX, SourceOptions
    from natsobj.spark.storage import open_store

    options = {"url": tagged_server, "bucket": bucket_name, "prefix": "p"}
    options.update({BUCKET_OPTION_PREFIX + name: text for name, text in STORE_TEXT.items()})
    opts = SourceOptions.parse(options)
    assert opts.create_bucket  # the default: a write creates its bucket, as here
    with open_store(opts, create=True) as store:  # what the batch and streaming sinks call
        assert store.bucket == bucket_name
    assert_created_with_every_setting(tagged_server, bucket_name)


def test_store_settings_dagster_resource(tagged_server, bucket_name) -> None:
    from dagster import AssetKey, build_output_context

    from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource

    resource = NatsObjectStoreResource(url=tagged_server, bucket_settings=STORE_TEXT)
    with resource.get_store(bucket_name, create=True) as store:
        assert store.bucket == bucket_name
    assert_created_with_every_setting(tagged_server, bucket_name)
    # The IO manager creates its bucket on the first output, through the same resource.
    manager = NatsObjectStoreIOManager(resource=resource, bucket=bucket_name + "io")
    with build_output_context(asset_key=AssetKey("a"), name="result") as context:
        manager.handle_output(context, b"x")
    assert_created_with_every_setting(tagged_server, bucket_name + "io")
