"""Option types shared by several commands (K=V metadata, K:V headers, byte counts, seconds)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import click

from natsobj.errors import BadChunkSize
from natsobj.model import check_chunk_size
from natsobj.operation_options import (
    Face,
    Kind,
    Option,
    for_face,
    reading,
    render_default,
)
from natsobj.parsing import parse_duration, parse_size


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


def _split_header(
    value: str, param: click.Parameter | None, ctx: click.Context | None
) -> tuple[str, str]:
    """``K:V`` as natscli and curl write headers. A header name holds neither ``:`` nor ``=``,
    so whichever comes first separates; ``K=V`` is the deprecated pre-0.2 form."""
    colon, equals = value.find(":"), value.find("=")
    if equals != -1 and (colon == -1 or equals < colon):
        click.echo(
            f"natsobj: warning: --header {value!r}: K=V is deprecated and will be removed in"
            " the next release; write K:V",
            err=True,
        )
        return _split(value, param, ctx)
    key, _, val = value.partition(":")
    if colon == -1 or not key.strip():
        raise click.BadParameter(f"{value!r} is not KEY:VALUE", ctx=ctx, param=param)
    return key.strip(), val.strip()


def header_map(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> dict[str, list[str]] | None:
    """Repeated ``--header K:V``; a repeated key keeps every value, like HTTP headers."""
    if not values:
        return None
    headers: dict[str, list[str]] = {}
    for value in values:
        key, val = _split_header(value, param, ctx)
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
        metavar="KEY:VALUE",
        callback=header_map,
        help=help_text,
    )


def json_option() -> Any:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print stable, machine-readable JSON."
    )


class TableValue(click.ParamType):
    """A value of one row of the operation options table, read by the row's one parser
    (``Option.parse``): the CLI accepts every spelling every other face does."""

    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = option.kind.name.lower()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.option.parse(value)
        except (ValueError, OverflowError) as exc:
            self.fail(str(exc), param, ctx)


def table_option(operation: str, name: str, *, help_text: str | None = None) -> Any:
    """The CLI face of one row of ``natsobj.operation_options``: its flag, help, values and
    default come from the row (a true/false row is a ``--x/--no-x`` switch)."""
    option = for_face(Face.CLI, operation)[name]
    flag = option.spelled(Face.CLI)
    default = option.default_for(Face.CLI)
    text = help_text or option.help
    if option.kind is Kind.BOOL:
        return click.option(
            f"{flag}/--no-{flag[2:]}", name, default=default, show_default=True, help=text
        )
    return click.option(
        flag,
        name,
        type=TableValue(option),
        default=default,
        metavar=option.kind.name,
        help=text,
        show_default=False if default is None else render_default(default),
    )


def read_options() -> Callable[[Callable[..., Any]], Any]:
    """The CLI face of the ``get`` rows (``--allow-missing-digest``, ``--follow-links``),
    handed to the command as one ``reading`` keyword (``ReadOptions``). Refusing is each
    row's default, so reading an object nothing can verify, or through a link into another
    bucket, is always the user's explicit choice."""
    names = list(for_face(Face.CLI, "get"))

    def decorate(command: Callable[..., Any]) -> Any:
        @functools.wraps(command)
        def with_reading(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names}
            return command(*args, reading=reading(Face.CLI, given), **kwargs)

        decorated: Any = with_reading
        for name in reversed(names):
            decorated = table_option("get", name)(decorated)
        return decorated

    return decorate


def progress_option() -> Any:
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Force the progress bar on or off (default: only when stderr is a terminal).",
    )


class ByteSize(click.ParamType):
    """A size (``parse_size``): ``100MB``, ``1.5GiB``, ``4096``."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):  # a default such as max_bytes' -1 (unlimited)
            return value
        try:
            return parse_size(value)
        except ValueError:
            self.fail(f"{value!r} is not a size like 100MB or 2GiB", param, ctx)


class Duration(click.ParamType):
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w``, ``1h30m``: an age (``parse_duration``)."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        try:
            duration = parse_duration(value)
        except ValueError:
            self.fail(f"{value!r} is not a duration like 30d, 12h or 90m", param, ctx)
        if duration < timedelta(0):
            self.fail(f"{value!r} is negative", param, ctx)
        return duration


class ByteRange(click.ParamType):
    """An HTTP byte range, as ``curl -r`` and ``aws s3api get-object --range`` take it:
    ``START-END`` (END included), ``START-`` (to the end) or ``-SUFFIX`` (the last SUFFIX
    bytes); a ``bytes=`` prefix is accepted. Converted to ``(start, end)`` in the core's
    convention (end excluded, None for the end; a suffix as a negative start)."""

    name = "range"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int | None]:
        if isinstance(value, tuple):
            return value
        text = str(value).strip().removeprefix("bytes=")
        first, dash, last = text.partition("-")
        digits = (first or "0").isdigit() and (last or "0").isdigit()
        if not dash or not (first or last) or not digits:
            self.fail(f"{value!r} is not a range like 0-99, 100- or -500", param, ctx)
        if not first:
            if int(last) == 0:
                self.fail(f"{value!r} selects no bytes", param, ctx)
            return -int(last), None
        if not last:
            return int(first), None
        if int(last) < int(first):
            self.fail(f"{value!r} ends before it starts", param, ctx)
        return int(first), int(last) + 1


def range_option() -> Any:
    return click.option(
        "--range",
        "byte_range",
        type=ByteRange(),
        metavar="START-END",
        help="Only these bytes: START-END (END included), START- or -SUFFIX, as curl -r."
        " Only the chunks holding them are fetched; a range is not checked against the"
        " object's SHA-256.",
    )


class ChunkSize(click.ParamType):
    """``--chunk-size``: bytes (``131072``) or a size (``128KiB``, ``parse_size``) the core's
    one rule takes (``check_chunk_size``), refused with a usage error (exit 2) before
    anything is sent."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return check_chunk_size(_count_or_size(value))
        except ValueError as exc:  # BadChunkSize, or not a size at all
            message = exc.message if isinstance(exc, BadChunkSize) else f"{value!r} is not a size"
            self.fail(message, param, ctx)


def _count_or_size(value: Any) -> int:
    """A plain count of bytes as it is, negative ones too (the core's chunk-size rule says
    what is wrong with them, in the words every face uses), else a size such as ``128KiB``."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        return parse_size(value)


def dry_run_option(help_text: str = "Print what would be done; change nothing.") -> Any:
    """``--dry-run``, and ``--dryrun`` as ``aws s3`` spells it."""
    return click.option("--dry-run", "--dryrun", "dry_run", is_flag=True, help=help_text)


def quiet_option() -> Any:
    """``--quiet`` as ``aws s3``: the operations done are not printed; errors still are."""
    return click.option(
        "--quiet", "-q", is_flag=True, help="Do not print each operation; errors still are."
    )


CONTENT_TYPE = "Content-Type"


def content_type_option() -> Any:
    """``--content-type``: kept as the object's ``Content-Type`` header, where HTTP clients
    and the other object store clients look for it."""
    return click.option(
        "--content-type",
        metavar="MIME",
        help=f"The object's media type, stored as its {CONTENT_TYPE} header.",
    )


def with_content_type(
    headers: dict[str, list[str] | str] | None, content_type: str | None
) -> dict[str, list[str] | str] | None:
    """``headers`` with ``--content-type`` set in them (it wins over a ``-H Content-Type``)."""
    if content_type is None:
        return headers
    kept = {k: v for k, v in (headers or {}).items() if k.lower() != CONTENT_TYPE.lower()}
    return {**kept, CONTENT_TYPE: [content_type]}
