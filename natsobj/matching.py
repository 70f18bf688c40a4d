"""The one name matcher every face uses: an exact name, a glob or a regex, on the full name.

Globs follow path rules: ``*`` and ``?`` stay inside one ``/`` segment, ``**`` crosses them,
so ``raw/*.csv`` does not match ``raw/old/x.csv`` but ``raw/**.csv`` does. ``[abc]``/``[!abc]``
are character classes. The same rules hold in Airflow, Dagster, Spark, the CLI and ``list``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from natsobj.deprecation import warn_deprecated

MatchKind = Literal["exact", "glob", "regex"]
MATCH_KINDS = ("exact", "glob", "regex")
# the parameter each face takes for a kind: exact names stay ``name``
OPTION_OF_KIND: dict[MatchKind, str] = {"exact": "name", "glob": "glob", "regex": "regex"}


_GLOB_SPECIALS = "*?["


def glob_literal_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard: every match starts with it, so a listing
    can be narrowed to that prefix before the glob is applied."""
    cut = min((i for i in (pattern.find(c) for c in _GLOB_SPECIALS) if i != -1), default=None)
    return pattern if cut is None else pattern[:cut]


def glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


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

    @cached_property
    def _regex(self) -> re.Pattern[str]:
        if self.match == "regex":
            return re.compile(self.pattern)
        if self.match == "glob":
            return re.compile(glob_to_regex(self.pattern))
        return re.compile(re.escape(self.pattern))

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
        return self._regex.fullmatch(name) is not None

    @classmethod
    def from_options(
        cls, *, name: str | None = None, glob: str | None = None, regex: str | None = None
    ) -> NameMatcher:
        """The matcher for a face's ``name=``/``glob=``/``regex=`` parameters: exactly one is
        given, so every face names its patterns the same way."""
        options: dict[MatchKind, str | None] = {"exact": name, "glob": glob, "regex": regex}
        given = [(kind, value) for kind, value in options.items() if value is not None]
        if len(given) != 1:
            got = ", ".join(OPTION_OF_KIND[kind] + "=" for kind, _ in given) or "none"
            raise ValueError(f"give exactly one of name=, glob= or regex= (got {got})")
        kind, value = given[0]
        return cls(value, kind)

    @property
    def option(self) -> tuple[str, str]:
        """The ``(parameter, value)`` pair this matcher came from: ``("glob", "raw/*.csv")``."""
        return (OPTION_OF_KIND[self.match], self.pattern)

    def describe(self) -> str:
        return self.pattern if self.match == "exact" else f"{self.match} {self.pattern!r}"
