"""How the command line says the operations and options an error's hint names.

A core error names what to do by its core name (``natsobj.hints``); the CLI says it as the
command line that does it. Flags are read from the commands themselves, so a hint always
names the flag as the command defines it.
"""

from __future__ import annotations

import functools

import click

from natsobj.hints import Option, Ref, Spelling

# Core operation -> the command (its path below ``natsobj``) and what stands for its subject.
COMMANDS: dict[str, tuple[str, str]] = {
    "create_store": ("store create", "BUCKET"),
    "update_store": ("store update", "BUCKET"),
    "set_lifecycle_rules": ("store lifecycle", "BUCKET --set GLOB=DURATION ..."),
    "list": ("ls", "BUCKET"),
    "get_file": ("get", "BUCKET NAME PATH"),
    "delete": ("rm", "BUCKET NAME"),
    "Archiver.run": ("archive run", ""),
    "offload": ("archive offload", ""),
    "serve": ("serve", ""),
}


def cli_words(root: click.Group) -> Spelling:
    """The CLI's spelling, read from its root command ``root``: the command line for an
    operation, the flag for an option, quoted as code; None for what it has no words for."""

    def words(ref: Ref) -> str | None:
        if isinstance(ref, Option):
            flag = _flag(ref, _every_option(root))
            return f"`{flag}`" if flag else None
        if ref.name not in COMMANDS:
            return None
        path, subject = COMMANDS[ref.name]
        command = command_at(root, path)
        line = ["natsobj", path, subject]
        for option in ref.options:
            line.append(_flag(option, {p.name: p for p in command.params}) or "")
        return "`" + " ".join(word for word in line if word) + "`"

    return words


def command_at(root: click.Group, path: str) -> click.Command:
    """The command ``natsobj <path>`` (a KeyError for one that does not exist)."""
    command: click.Command = root
    for word in path.split():
        if not isinstance(command, click.Group) or word not in command.commands:
            raise KeyError(f"no command natsobj {path}")
        command = command.commands[word]
    return command


def _flag(option: Option, params: dict[str | None, click.Parameter]) -> str | None:
    """``option`` as a flag of one of ``params`` (None when none takes it): a switch alone,
    a value after the flag."""
    param = params.get(option.name)
    if not isinstance(param, click.Option):
        return None
    if option.value is False and param.secondary_opts:
        return param.secondary_opts[0]
    flag = max(param.opts, key=len)
    if param.is_flag or param.count or option.value is None:
        return flag
    value = str(option.value).lower() if isinstance(option.value, bool) else option.value
    return f"{flag} {value}"


@functools.cache
def _every_option(root: click.Group) -> dict[str | None, click.Parameter]:
    """Every option of every command by its core name (the first command's where two share
    one: a name means one thing throughout the CLI)."""
    found: dict[str | None, click.Parameter] = {}
    pending: list[click.Command] = [root]
    while pending:
        command = pending.pop(0)
        for param in command.params:
            found.setdefault(param.name, param)
        if isinstance(command, click.Group):
            pending.extend(command.commands.values())
    return found
