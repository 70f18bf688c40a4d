"""Where a command's objects are: ``BUCKET NAME`` as natsobj has always taken them, or
``nats://BUCKET/NAME`` as ``aws s3`` users write ``s3://bucket/key``.

The one rule, for every command: an operand in a bucket's place may be a ``nats://`` URL, and
then it stands for the bucket and for the name (or prefix) after it, so ``natsobj ls
nats://cli/up/`` is ``natsobj ls cli up/`` and ``natsobj get nats://cli/a.csv out`` is
``natsobj get cli a.csv out``. The URL is read by the one parser of ``nats://`` URLs
(``natsobj.paths.parse_nats_url``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from natsobj.paths import SCHEME, is_nats_url, parse_nats_url


def nats_location(text: str) -> tuple[str, str] | None:
    """``(bucket, key)`` of a ``nats://BUCKET/KEY`` operand (the key as written, a trailing
    ``/`` kept), None for anything else (a bucket name, a local path). A URL naming no
    bucket, or an Airflow connection id (``nats://conn@bucket``), is a usage error."""
    if not is_nats_url(text):
        return None
    parsed = parse_nats_url(text)
    if not parsed.bucket or parsed.conn_id:
        raise click.UsageError(f"{text}: name a bucket, as in {SCHEME}BUCKET/KEY")
    return parsed.bucket, parsed.key


class BucketName(click.ParamType):
    """A bucket operand: ``BUCKET``, or ``nats://BUCKET`` (a trailing ``/`` allowed)."""

    name = "bucket"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        location = nats_location(str(value))
        if location is None:
            return str(value)
        bucket, key = location
        if key.strip("/"):
            self.fail(f"{value!r} names an object; give the bucket alone", param, ctx)
        return bucket


def object_operands(
    *slots: str,
    required: int,
    variadic: bool = False,
    types: Mapping[str, click.ParamType] | None = None,
) -> Callable[[Callable[..., Any]], Any]:
    """The positional operands of a command, by the one rule above: ``slots`` are the
    keyword names the command takes them as, the first ``required`` of them required; a
    slot named ``bucket`` or ``*_bucket`` may hold a URL that fills it and the slot after it.
    With ``variadic`` the last slot takes every operand left, as a tuple (URLs of the same
    bucket among them read as their keys). ``types``
    converts the operands of the slots named (``click.Path`` checks, for instance)."""
    kinds = dict(types or {})

    def decorate(command: Callable[..., Any]) -> Any:
        @functools.wraps(command)
        def with_operands(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            kwargs.update(_assign(ctx, kwargs.pop("operands"), slots, required, variadic, kinds))
            return command(*args, **kwargs)

        metavar = _metavar(slots, required, variadic)
        return click.argument("operands", nargs=-1, metavar=metavar)(with_operands)

    return decorate


def _assign(
    ctx: click.Context,
    values: Sequence[str],
    slots: Sequence[str],
    required: int,
    variadic: bool,
    kinds: Mapping[str, click.ParamType],
) -> dict[str, Any]:
    given: dict[str, Any] = {}
    rest: list[str] = []
    place = 0
    for value in values:
        if place >= len(slots):
            if not variadic:
                raise click.UsageError(f"Got unexpected extra argument ({value})", ctx)
            rest.append(value)
            continue
        slot = slots[place]
        location = nats_location(value) if _holds_bucket(slot) else None
        if location is not None and place + 1 < len(slots):
            given[slot], given[slots[place + 1]] = location
            place += 2
        else:
            given[slot] = value
            place += 1
    for slot in slots[:required]:
        if slot not in given:
            raise click.UsageError(f"Missing argument '{_shown(slot)}'.", ctx)
    result: dict[str, Any] = {slot: given.get(slot) for slot in slots}
    for slot, kind in kinds.items():
        if result[slot] is not None:
            result[slot] = kind.convert(result[slot], None, ctx)
    if variadic:
        last = slots[-1]
        more = [_same_bucket(ctx, value, result[slots[0]]) for value in rest]
        result[last] = tuple(([result[last]] if result[last] is not None else []) + more)
    return result


def _same_bucket(ctx: click.Context, value: str, bucket: str) -> str:
    """A further NAME given as a URL (``rm nats://b/x nats://b/y``): its key, when it is in
    the command's bucket."""
    location = nats_location(value)
    if location is None:
        return value
    if location[0] != bucket:
        raise click.UsageError(f"{value}: every NAME must be in bucket {bucket!r}", ctx)
    return location[1]


def _holds_bucket(slot: str) -> bool:
    return slot == "bucket" or slot.endswith("_bucket")


def _shown(slot: str) -> str:
    return slot.upper()


def _metavar(slots: Sequence[str], required: int, variadic: bool) -> str:
    """``BUCKET NAME PATH``, optional ones in brackets, and the URL spelling of the first
    bucket and the slot after it."""
    words = [_shown(s) if i < required else f"[{_shown(s)}]" for i, s in enumerate(slots)]
    if variadic:
        words[-1] += "..."
    url = f"{SCHEME}{_shown(slots[0])}/{_shown(slots[1])}" if len(slots) > 1 else ""
    if not url:
        return " ".join(words)
    return " ".join(words) + " | " + " ".join([url, *words[2:]])
