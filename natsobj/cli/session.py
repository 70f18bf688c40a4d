"""Which server the CLI talks to, and the one client a command invocation shares.

Settings come only from ``ConnectionSettings``: ``--url`` stands in for ``NATS_URL``, the other
``NATS_*`` variables still apply, and explicit options win over both. With nothing set, the
embedded server of this directory is used if it is running; it is never started implicitly,
so a typo'd environment does not silently spawn a server (the rule every face shares:
``natsobj.local.embedded_rule``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from natsobj.cli.connection_flags import spelling
from natsobj.cli.exits import UsageProblem
from natsobj.settings import SETTINGS, URL_FIELD, ConnectionSettings, Setting
from natsobj.sync import Client, ObjectStore, connect


def resolve_settings(
    url: str | None, overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> ConnectionSettings:
    env = dict(os.environ if environ is None else environ)
    try:
        if url:
            env["NATS_URL"] = url
        return ConnectionSettings.from_env(env, **overrides)
    except ValueError as exc:
        raise UsageProblem(f"bad connection settings: {exc}") from exc


def connection_options(command: Callable[..., Any]) -> Any:
    """The root command's connection options: one per ``ConnectionSettings`` field, help and
    environment variable from its row of the table, flags and metavar from the CLI's
    spellings (``--url`` gives the servers)."""
    for name, row in reversed(SETTINGS.items()):
        command = _connection_option(name, row)(command)
    return command


def _connection_option(name: str, row: Setting) -> Callable[..., Any]:
    flags, metavar = spelling(name).flags, spelling(name).metavar
    dest = "url" if name == URL_FIELD else name
    help_text = row.help.rstrip(".") + (f" (or ${row.env})." if row.env else ".")
    if name == URL_FIELD:
        help_text += " Default: the embedded server running in this directory."
    if row.kind is bool:
        return click.option(f"{flags[0]}/--no-{flags[0][2:]}", dest, default=None, help=help_text)
    kind: click.ParamType = click.STRING
    if row.choices:
        kind = click.Choice(row.choices)
    elif row.kind is float:
        kind = click.FloatRange(min=0, min_open=True)
    return click.option(*flags, dest, type=kind, metavar=metavar, help=help_text)


@dataclass
class Session:
    """Connection options from the root command; connects on first use, closes on exit."""

    url: str | None
    overrides: dict[str, Any]
    _client: Client | None = field(default=None, repr=False)

    @property
    def settings(self) -> ConnectionSettings:
        return resolve_settings(self.url, self.overrides)

    def client(self) -> Client:
        if self._client is None:
            self._client = connect(self.settings)
            click.get_current_context().find_root().call_on_close(self.close)
        return self._client

    def store(self, bucket: str) -> ObjectStore:
        return self.client().store(bucket)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


pass_session = click.make_pass_decorator(Session)
