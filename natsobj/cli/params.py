"""Option types shared by several commands (K=V pairs, headers, byte counts, seconds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click


def _split(value: str, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"{value!r} is not KEY=VALUE", ctx=ctx, param=param)
    return key.strip(), val


def metadata_map(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> dict[str, str] | None:
    """Repeated ``--metadata k=v``; None when the option was not given at all."""
    if not values:
        return None
    return dict(_split(v, param, ctx) for v in values)


def header_map(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> dict[str, list[str]] | None:
    """Repeated ``--header K=V``; a repeated key keeps every value, like HTTP headers."""
    if not values:
        return None
    headers: dict[str, list[str]] = {}
    for value in values:
        key, val = _split(value, param, ctx)
        headers.setdefault(key, []).append(val)
    return headers


def metadata_option(help_text: str) -> Any:
    return click.option(
        "--metadata",
        "-m",
        "metadata",
        multiple=True,
        metavar="KEY=VALUE",
        callback=metadata_map,
        help=help_text,
    )


def header_option(help_text: str) -> Any:
    return click.option(
        "--header",
        "-H",
        "headers",
        multiple=True,
        metavar="KEY=VALUE",
        callback=header_map,
        help=help_text,
    )


def json_option() -> Any:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print stable, machine-readable JSON."
    )


def progress_option() -> Any:
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Force the progress bar on or off (default: only when stderr is a terminal).",
    )
