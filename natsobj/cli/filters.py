"""``--exclude``/``--include`` as ``aws s3`` reads them, on every recursive command.

Every path is included until a filter says otherwise; the filters are applied in the order
given and the last one that matches a path decides (``--exclude '*' --include '*.csv'``
keeps only CSV files, ``--include '*.csv' --exclude '*'`` keeps nothing). Patterns are
matched against the path relative to the source directory or prefix, with aws's wildcards:
``*`` matches anything, ``/`` included (``*.tmp`` is every .tmp file at any depth), ``?``
one character within a segment, ``[abc]``/``[!abc]`` a character class. The matching itself
is natsobj's one glob matcher (``natsobj.matching``), an aws ``*`` being its ``**``.

Click collects a repeated option's values without saying how they interleave with another
option's, so the command class reads the order from the command line itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from natsobj.matching import NameMatcher

EXCLUDE, INCLUDE = "--exclude", "--include"
_ORDER = "natsobj.filters"


def aws_glob(pattern: str) -> NameMatcher:
    """An aws filter pattern as natsobj's glob: each run of ``*`` crosses ``/``."""
    glob, stars = [], False
    for ch in pattern:
        if ch == "*":
            if not stars:
                glob.append("**")
            stars = True
            continue
        stars = False
        glob.append(ch)
    return NameMatcher.from_options(glob="".join(glob))


@dataclass(frozen=True)
class Filters:
    """The filters of one command, in the order given: ``(include?, matcher)`` pairs."""

    rules: tuple[tuple[bool, NameMatcher], ...] = ()

    @classmethod
    def parse(cls, given: Sequence[tuple[str, str]]) -> Filters:
        try:
            return cls(tuple((flag == INCLUDE, aws_glob(pattern)) for flag, pattern in given))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None

    def wanted(self, relative: str) -> bool:
        keep = True
        for include, matcher in self.rules:
            if matcher.matches(relative):
                keep = include
        return keep


class FilteredCommand(click.Command):
    """A command taking ``--exclude``/``--include``: notes the order they were given in."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ORDER] = _in_order(args)
        return super().parse_args(ctx, args)


def _in_order(args: Sequence[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            break
        flag, equals, value = token.partition("=")
        if flag not in (EXCLUDE, INCLUDE):
            continue
        if not equals:
            value = next(tokens, "")
        found.append((flag, value))
    return found


def filter_options() -> Callable[[Callable[..., Any]], Any]:
    """``--exclude``/``--include`` for a ``FilteredCommand``, handed to it as ``filters``."""

    def decorate(command: Callable[..., Any]) -> Any:
        @functools.wraps(command)
        def with_filters(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("exclude"), kwargs.pop("include")
            order = click.get_current_context().meta.get(_ORDER, [])
            return command(*args, filters=Filters.parse(order), **kwargs)

        with_filters = click.option(
            INCLUDE,
            "include",
            multiple=True,
            metavar="PATTERN",
            help="Include paths matching PATTERN that an earlier --exclude left out.",
        )(with_filters)
        return click.option(
            EXCLUDE,
            "exclude",
            multiple=True,
            metavar="PATTERN",
            help="Leave out paths matching PATTERN, relative to the source; aws s3's"
            " filters: in order, the last match decides, '*' crosses '/'.",
        )(with_filters)

    return decorate
