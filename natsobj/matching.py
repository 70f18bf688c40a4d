"""The one name matcher every face uses: an exact name, a glob or a regex, on the full name.

Globs follow path rules: ``*`` and ``?`` stay inside one ``/`` segment, ``**`` crosses them,
so ``raw/*.csv`` does not match ``raw/old/x.csv`` but ``raw/**.csv`` does. ``[abc]``/``[!abc]``
are character classes. The same rules hold in Airflow, Dagster, Spark, the CLI and ``list``.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeVar

from natsobj.deprecation import warn_deprecated

MatchKind = Literal["exact", "glob", "regex"]
T = TypeVar("T")
MATCH_KINDS = ("exact", "glob", "regex")
# the parameter each face takes for a kind: exact names stay ``name``
OPTION_OF_KIND: dict[MatchKind, str] = {"exact": "name", "glob": "glob", "regex": "regex"}


_GLOB_SPECIALS = "*?["


def glob_literal_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard: every match starts with it, so a listing
    can be narrowed to that prefix before the glob is applied."""
    cut = min((i for i in (pattern.find(c) for c in _GLOB_SPECIALS) if i != -1), default=None)
    return pattern if cut is None else pattern[:cut]


class _Glob:
    """A glob compiled for matching in time linear in the name and the pattern.

    Python's regex engine backtracks: with two or more stars a hostile pattern (``**/``
    repeated) or name costs time exponential in the number of stars, and a put checks the
    lifecycle rules' globs on its name. So a glob is read into tokens and matched two ways with
    the same answer: by its regex while the backtracking it can do on a name of that length
    stays within ``_REGEX_STEPS`` (always for one star or none: a single backtracking point),
    else by simulating all its positions at once, one step per character of the name, with
    the positions as the bits of an int."""

    def __init__(self, pattern: str) -> None:
        regex: list[str] = []
        literals: dict[str, int] = {}
        self._classes: list[tuple[int, re.Pattern[str]]] = []
        self._one = self._segment = self._any = 0  # bits of ?, * and ** positions
        position = i = 0
        while i < len(pattern):
            ch = pattern[i]
            bit = 1 << position
            if ch == "*":
                double = pattern.startswith("**", i)
                i += 2 if double else 1
                if regex and regex[-1] in _STARS:  # ``***``: one star, the wider one
                    if double or regex[-1] == ".*":
                        regex[-1] = ".*"
                        self._segment &= ~(bit >> 1)
                        self._any |= bit >> 1
                    continue
                regex.append(".*" if double else "[^/]*")
                if double:
                    self._any |= bit
                else:
                    self._segment |= bit
                position += 1
                continue
            end = pattern.find("]", i + 1) if ch == "[" else -1
            if ch == "?":
                regex.append("[^/]")
                self._one |= bit
            elif end != -1:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                try:
                    char_class = re.compile(f"[{body}]", re.DOTALL)
                except re.error as exc:
                    raise ValueError(f"invalid glob {pattern!r}: {exc}") from None
                regex.append(char_class.pattern)
                self._classes.append((bit, char_class))
                i = end
            else:
                regex.append(re.escape(ch))
                literals[ch] = literals.get(ch, 0) | bit
            position += 1
            i += 1
        self._regex = re.compile("".join(regex), re.DOTALL)
        self._literals = literals
        self._stars = self._segment | self._any
        self._accept = 1 << position
        self._start = 1 | ((1 & self._stars) << 1)
        # per character seen: the positions a star stays on and those a single token leaves
        self._steps: dict[str, tuple[int, int]] = {}
        self._regex_length = _regex_length(bin(self._stars).count("1"), position)

    def matches(self, name: str) -> bool:
        if len(name) <= self._regex_length:
            return self._regex.fullmatch(name) is not None
        return self._simulate(name)

    def _simulate(self, name: str) -> bool:
        state, stars, steps = self._start, self._stars, self._steps
        for ch in name:
            stay, leave = steps.get(ch) or self._step(ch)
            state = (state & stay) | ((state & leave) << 1)
            if not state:
                return False
            state |= (state & stars) << 1  # a star may match nothing
        return bool(state & self._accept)

    def _step(self, ch: str) -> tuple[int, int]:
        stay = self._any if ch == "/" else self._stars
        leave = self._literals.get(ch, 0) | (0 if ch == "/" else self._one)
        for bit, char_class in self._classes:
            if char_class.fullmatch(ch):
                leave |= bit
        if len(self._steps) < _STEPS_KEPT:
            self._steps[ch] = (stay, leave)
        return stay, leave


_STARS = (".*", "[^/]*")
# The backtracking a glob's regex may do on one name (its worst case, counted in tokens
# tried) before the simulation, linear but slower on ordinary names, is used instead.
_REGEX_STEPS = 1_000_000
_STEPS_KEPT = 1024  # distinct characters whose step a glob with classes remembers


def _regex_length(stars: int, tokens: int) -> int:
    """The longest name a glob's regex matches within ``_REGEX_STEPS``. With one star or
    none every name: the regex tries each length of that star once. With ``k`` stars it may
    try every way to share ``n`` characters among them, ``comb(n + k, k)``, each for every
    token (a bound on the work, not the average)."""
    if stars <= 1:
        return sys.maxsize
    n = 0
    while (stars + 1) * math.comb(n + 1 + stars, stars) * tokens <= _REGEX_STEPS:
        n += 1
    return n


def legacy_matcher(
    pattern: str, match: str, *, category: type[Warning] = DeprecationWarning, stacklevel: int = 4
) -> NameMatcher:
    """The matcher for the old ``pattern=`` + ``match=`` pair, with a warning that names the
    parameter to use instead."""
    matcher = NameMatcher(pattern, match)  # type: ignore[arg-type]
    parameter, _ = matcher.option
    warn_deprecated(
        f"pattern={pattern!r}, match={match!r}",
        f"{parameter}={pattern!r}",
        category=category,
        stacklevel=stacklevel,
    )
    return matcher


@dataclass(frozen=True)
class NameMatcher:
    pattern: str
    match: MatchKind = "exact"

    def __post_init__(self) -> None:
        if self.match not in MATCH_KINDS:
            raise ValueError(f"match must be one of {MATCH_KINDS}, not {self.match!r}")
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError("the object name or pattern to wait for is empty")
        if self.match == "regex":
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.pattern!r}: {exc}") from exc
        _ = self._compiled  # a bad glob fails here, not at its first name

    @cached_property
    def _compiled(self) -> re.Pattern[str] | _Glob | None:
        if self.match == "regex":
            return re.compile(self.pattern)
        return _Glob(self.pattern) if self.match == "glob" else None

    @property
    def exact_name(self) -> str | None:
        """The single name matched, when there is one (lets pokes use get_info, not list)."""
        return self.pattern if self.match == "exact" else None

    @property
    def literal_prefix(self) -> str:
        """A prefix every matching name has ("" when none is known, as for a regex)."""
        if self.match == "exact":
            return self.pattern
        return glob_literal_prefix(self.pattern) if self.match == "glob" else ""

    def matches(self, name: str) -> bool:
        compiled = self._compiled
        if compiled is None:
            return name == self.pattern
        if isinstance(compiled, _Glob):
            return compiled.matches(name)
        return compiled.fullmatch(name) is not None

    @classmethod
    def from_options(
        cls, *, name: str | None = None, glob: str | None = None, regex: str | None = None
    ) -> NameMatcher:
        """The matcher for a face's ``name=``/``glob=``/``regex=`` parameters: exactly one is
        given, so every face names its patterns the same way."""
        kind, value = _one_option(name=name, glob=glob, regex=regex)
        return cls(value, kind)

    @classmethod
    def all_from_options(
        cls,
        *,
        name: str | Sequence[str] | None = None,
        glob: str | Sequence[str] | None = None,
        regex: str | Sequence[str] | None = None,
    ) -> list[NameMatcher]:
        """The matchers of a face that waits for several names or patterns at once: exactly
        one of ``name=``/``glob=``/``regex=``, a string or a non-empty list of them."""
        kind, value = _one_option(name=name, glob=glob, regex=regex)
        if isinstance(value, str):
            return [cls(value, kind)]
        if not value:
            raise ValueError(
                f"{OPTION_OF_KIND[kind]}= is an empty list: give at least one name or pattern"
            )
        return [cls(each, kind) for each in value]

    @property
    def option(self) -> tuple[str, str]:
        """The ``(parameter, value)`` pair this matcher came from: ``("glob", "raw/*.csv")``."""
        return (OPTION_OF_KIND[self.match], self.pattern)

    def describe(self) -> str:
        return self.pattern if self.match == "exact" else f"{self.match} {self.pattern!r}"


def _one_option(*, name: T | None, glob: T | None, regex: T | None) -> tuple[MatchKind, T]:
    """The one of ``name=``/``glob=``/``regex=`` given, by its kind; two or none is an error."""
    options: dict[MatchKind, T | None] = {"exact": name, "glob": glob, "regex": regex}
    given = [(kind, value) for kind, value in options.items() if value is not None]
    if len(given) != 1:
        got = ", ".join(OPTION_OF_KIND[kind] + "=" for kind, _ in given) or "none"
        raise ValueError(f"give exactly one of name=, glob= or regex= (got {got})")
    return given[0]
