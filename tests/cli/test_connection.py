"""Connection options reach ConnectionSettings, with the documented precedence."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Invoke
from click.testing import CliRunner

from natsobj.cli import cli
from natsobj.cli.exits import ExitCode, UsageProblem
from natsobj.cli.session import resolve_settings
from natsobj.local.embedded import NatsServerProcess


def test_url_option_stands_in_for_nats_url_and_options_win() -> None:
    env = {"NATS_URL": "nats://env-host:4222", "NATS_USER": "env-user", "NATS_PASSWORD": "pw"}
    from_env = resolve_settings(None, {}, env)
    assert from_env.servers == ["nats://env-host:4222"] and from_env.user == "env-user"

    flagged = resolve_settings("nats://u:p@flag-host:4222?domain=hub", {"user": "opt-user"}, env)
    assert flagged.servers == ["nats://flag-host:4222"]
    assert flagged.user == "opt-user"  # option > environment > URL
    assert flagged.password == "pw"
    assert flagged.js_api_prefix == "$JS.hub.API"

    prefixed = resolve_settings("nats://h:4222", {"api_prefix": "JS.acc.API"}, {})
    assert prefixed.js_api_prefix == "JS.acc.API"


def test_nothing_set_and_no_embedded_server_is_an_error(isolated_cwd: Path) -> None:
    result = CliRunner().invoke(cli, ["ls"], env={"NATS_URL": None}, catch_exceptions=False)
    assert result.exit_code == ExitCode.CONNECTION
    assert "natsobj serve" in result.stderr and "NATS_URL" in result.stderr
    assert str(isolated_cwd / ".natsobj") in result.stderr
    assert not (isolated_cwd / ".natsobj").exists(), "no server was started"
    with pytest.raises(UsageProblem, match="domain or api_prefix"):
        resolve_settings("nats://h:4222", {"domain": "a", "api_prefix": "b"}, {})


def test_domain_option_against_a_server_with_a_jetstream_domain(
    invoke: Invoke, tmp_path: Path
) -> None:
    with NatsServerProcess(tmp_path / "leaf", config="jetstream {\n  domain: hub\n}\n") as server:
        url = server.url
        assert invoke("--domain", "hub", "store", "create", "dom", url=url).exit_code == 0
        put = invoke("--domain", "hub", "put", "dom", "x.txt", "-", input=b"via domain", url=url)
        assert put.exit_code == 0, put.stderr
        got = invoke("--domain", "hub", "get", "dom", "x.txt", "-", url=url)
        assert got.stdout_bytes == b"via domain"

        wrong = invoke("--domain", "elsewhere", "ls", "dom", url=url)
        assert wrong.exit_code == ExitCode.CONNECTION
        assert "$JS.elsewhere.API" in wrong.stderr

        both = invoke("--domain", "hub", "--api-prefix", "X", "ls", "dom", url=url)
        assert both.exit_code == ExitCode.USAGE
