"""docs/cli.md's table from ``aws s3`` to natsobj stays true: each natsobj command of it, with
every flag and value it shows, parses through the real click app (tests/cli/test_aws_habits.py
runs them against a server)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from natsobj.cli import cli

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _table_commands() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## From `aws s3`", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `aws")]
    return [found for row in rows for found in re.findall(r"`(natsobj [^`]*)`", row.split("|")[2])]


COMMANDS = _table_commands()


def test_the_table_maps_every_aws_s3_command_and_flag_the_issue_names() -> None:
    shown = " ".join(COMMANDS)
    for flag in (
        "--recursive", "--exclude", "--include", "--dryrun", "--quiet",
        "--content-type", "--human-readable", "--summarize", "--delete",
    ):  # fmt: skip
        assert flag in shown, flag
    for verb in ("ls", "cp", "sync", "rm", "mv", "store create", "store rm", "info", "get"):
        assert f"natsobj {verb} " in shown or shown.endswith(f"natsobj {verb}"), verb


@pytest.mark.parametrize("line", COMMANDS)
def test_each_natsobj_command_of_the_table_parses(line: str) -> None:
    # '...' stands for the row's SOURCE DEST
    words = [
        x for w in shlex.split(line)[1:] for x in (["src", "nats://b/dst"] if w == "..." else [w])
    ]
    root = click.Context(cli, info_name="natsobj")
    command: click.Command = cli
    path = []
    while isinstance(command, click.Group) and words and words[0] in command.commands:
        path.append(words[0])
        command = command.commands[words.pop(0)]
    assert path, f"no natsobj command in {line!r}"
    with root:
        ctx = command.make_context(" ".join(path), list(words), parent=root)
    given = {
        p.name for p in command.params if ctx.get_parameter_source(p.name).name == "COMMANDLINE"
    }
    flags = {w.split("=")[0] for w in words if w.startswith("--")}
    options = {opt: p.name for p in command.params if isinstance(p, click.Option) for opt in p.opts}
    for flag in flags:
        assert options.get(flag) in given, f"{line!r}: {flag} is not an option it took"
