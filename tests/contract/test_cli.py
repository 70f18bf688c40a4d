"""The CLI face of the operation options table: each row the CLI takes is an option of every
command of its operation, spelled by the table, reading every spelling to the table's value
(a true/false row is a ``--x/--no-x`` switch), with the table's default; and a put's TTL and
a watch's options given on a real command line reach a real nats-server as the table says."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from natsobj.cli.app import cli
from natsobj.operation_options import OPERATIONS, Face, Kind, for_face
from tests.contract.cases import Case, cases, defaults
from tests.contract.reached import ttl_of

# The commands that run each operation.
COMMANDS = {
    "put": [("put",)],
    "get": [("get",), ("cat",), ("cp",), ("sync",)],
    "list": [("ls",)],
    "version": [("get",), ("cat",), ("info",), ("rm",), ("restore",)],
    "follow": [("watch",)],
    "archive": [("archive", "run")],
    "offload": [("archive", "offload")],
}


def command(path: tuple[str, ...]) -> click.Command:
    found: click.Command = cli
    for name in path:
        assert isinstance(found, click.Group)
        found = found.commands[name]
    return found


def parameter(path: tuple[str, ...], case_option) -> click.Option:
    flag = case_option.spelled(Face.CLI)
    matches = [p for p in command(path).params if isinstance(p, click.Option) and flag in p.opts]
    assert matches, f"natsobj {' '.join(path)} has no {flag}"
    return matches[0]


def test_every_operation_the_cli_takes_has_its_commands() -> None:
    taken = {op for op in OPERATIONS if for_face(Face.CLI, op)}
    assert taken == set(COMMANDS)


@pytest.mark.parametrize(
    "case",
    [c for op in COMMANDS for c in cases(Face.CLI, op)],
    ids=lambda c: c.id,
)
def test_every_spelling(case: Case) -> None:
    for path in COMMANDS[case.option.operation]:
        param = parameter(path, case.option)
        context = click.Context(command(path))
        if case.option.kind is Kind.BOOL:
            flag = case.option.spelled(Face.CLI)
            switch = flag if case.expected else f"--no-{flag[2:]}"
            assert switch in (param.opts if case.expected else param.secondary_opts), path
            continue
        assert param.type_cast_value(context, case.given) == case.expected, path


@pytest.mark.parametrize("operation", list(COMMANDS))
def test_defaults(operation: str) -> None:
    for name, default in defaults(Face.CLI, operation).items():
        for path in COMMANDS[operation]:
            option = for_face(Face.CLI, operation)[name]
            param = parameter(path, option)
            context = click.Context(command(path))
            assert param.get_default(context, call=True) == default, (path, name)


@pytest.fixture
def invoke(nats_url: str):
    def run(*args: str):
        return CliRunner().invoke(cli, ["--url", nats_url, *args], catch_exceptions=False)

    return run


@pytest.mark.parametrize("given", ["2d", "90m", "3600", "never"])
def test_put_ttl_reaches_the_server(given, invoke, sync_client, bucket_name, tmp_path) -> None:
    sync_client.create_store(bucket_name, delete_marker_ttl=1)
    source = tmp_path / "f"
    source.write_bytes(b"x")
    done = invoke("put", bucket_name, "o", str(source), "--ttl", given)
    assert done.exit_code == 0, done.stderr
    expected = for_face(Face.CLI, "put")["ttl"].parse(given)
    assert ttl_of(sync_client.store(bucket_name).get_info("o")) == expected


def test_store_create_takes_a_duration(invoke, sync_client, bucket_name) -> None:
    """``store create --ttl 7d`` as ``put --ttl 7d``: one vocabulary for durations."""
    done = invoke("store", "create", bucket_name, "--ttl", "7d")
    assert done.exit_code == 0, done.stderr
    status = sync_client.store(bucket_name).status()
    assert status.ttl is not None and status.ttl.days == 7


def test_watch_options_reach_the_watch(invoke, store, bucket_name) -> None:
    """--start earliest with deletes left out, then with them: the table's words, for real."""
    store.put("kept", b"1")
    store.put("gone", b"2")
    store.delete("gone")
    without = invoke(
        "watch", bucket_name, "--start", "history", "--no-include-deletes", "--count", "1"
    )
    assert without.exit_code == 0, without.stderr
    assert "kept" in without.stdout and "DEL" not in without.stdout
    with_deletes = invoke("watch", bucket_name, "--start", "earliest", "--count", "2")
    assert "DEL" in with_deletes.stdout
