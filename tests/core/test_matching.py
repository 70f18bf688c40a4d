"""The one name matcher every face uses: the semantics table of docs/python.md ("Name
patterns"), checked by example and against properties that must hold for any name."""

from __future__ import annotations

import re
import time
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from natsobj.deprecation import warn_deprecated
from natsobj.matching import NameMatcher, _Glob, legacy_matcher

pytestmark = pytest.mark.unit

# (pattern, matches, does not match): docs/python.md's table, row by row
GLOB_TABLE = [
    ("raw/*.csv", ["raw/a.csv", "raw/.csv"], ["raw/old/a.csv", "raw/a.csvx", "xraw/a.csv"]),
    ("raw/**.csv", ["raw/a.csv", "raw/old/a.csv", "raw/a/b/c.csv"], ["other/a.csv"]),
    ("raw/**", ["raw/a", "raw/a/b"], ["raw", "rawx/a"]),
    ("day-?.csv", ["day-1.csv"], ["day-10.csv", "day-/.csv", "day-.csv"]),
    ("v[0-9].bin", ["v3.bin"], ["vx.bin", "v33.bin"]),
    ("v[!0-9].bin", ["vx.bin"], ["v3.bin"]),
    ("a+b(c).txt", ["a+b(c).txt"], ["aab(c).txt", "a+bc.txt"]),  # regex characters are literal
]


@pytest.mark.parametrize(("pattern", "yes", "no"), GLOB_TABLE)
def test_glob_semantics_table(pattern: str, yes: list[str], no: list[str]) -> None:
    matcher = NameMatcher.from_options(glob=pattern)
    assert [n for n in yes if matcher.matches(n)] == yes
    assert [n for n in no if matcher.matches(n)] == []


def test_regex_matches_the_whole_name() -> None:
    matcher = NameMatcher.from_options(regex=r"in/\d+\.csv")
    assert matcher.matches("in/12.csv")
    assert not matcher.matches("in/12.csv.bak")
    assert not matcher.matches("x/in/12.csv")
    assert matcher.literal_prefix == ""


def test_exact_name_is_literal() -> None:
    matcher = NameMatcher.from_options(name="raw/*.csv")
    assert matcher.matches("raw/*.csv") and not matcher.matches("raw/a.csv")
    assert matcher.exact_name == "raw/*.csv"


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"name": "a", "glob": "b"}, {"glob": "a", "regex": "b"}, {"name": "a", "regex": "b"}],
)
def test_exactly_one_of_name_glob_regex(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="exactly one of name=, glob= or regex="):
        NameMatcher.from_options(**kwargs)


def test_bad_patterns_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"invalid regex '\('"):
        NameMatcher.from_options(regex="(")
    with pytest.raises(ValueError, match="empty"):
        NameMatcher.from_options(glob="")


def test_option_round_trips_through_from_options() -> None:
    for kwargs in ({"name": "a"}, {"glob": "a/*"}, {"regex": "a.+"}):
        matcher = NameMatcher.from_options(**kwargs)
        parameter, value = matcher.option
        assert {parameter: value} == kwargs
        assert NameMatcher.from_options(**{parameter: value}) == matcher


def test_deprecation_helpers_name_old_and_new() -> None:
    with pytest.warns(DeprecationWarning, match=r"old\(\) is deprecated.*use new\(\)"):
        warn_deprecated("old()", "new()")
    with pytest.warns(DeprecationWarning, match=r"match='glob' is deprecated.*use glob='r/\*'"):
        assert legacy_matcher("r/*", "glob") == NameMatcher("r/*", "glob")


segment = st.text(alphabet="abc.-_", min_size=0, max_size=4)
names = st.lists(segment, min_size=1, max_size=4).map("/".join).filter(bool)
literal_globs = st.text(alphabet="abc/.-_+()^$", min_size=1, max_size=12)


@given(names)
def test_double_star_matches_everything_and_star_one_segment(name: str) -> None:
    assert NameMatcher("**", "glob").matches(name)
    assert NameMatcher("*", "glob").matches(name) == ("/" not in name)


@given(literal_globs, names)
def test_a_glob_without_wildcards_is_an_exact_name(pattern: str, name: str) -> None:
    glob = NameMatcher(pattern, "glob")
    assert glob.matches(pattern)
    assert glob.matches(name) == (name == pattern)


@given(st.text(alphabet="ab/*?.", min_size=1, max_size=10), names)
def test_every_match_starts_with_the_literal_prefix(pattern: str, name: str) -> None:
    matcher = NameMatcher(pattern, "glob")
    if matcher.matches(name):
        assert name.startswith(matcher.literal_prefix)


@given(st.text(alphabet="ab/.", min_size=1, max_size=10), names)
def test_a_glob_agrees_with_the_regex_it_documents(pattern: str, name: str) -> None:
    """``*`` is ``[^/]*`` and ``**`` is ``.*``: the table's rules, applied to random names."""
    star = NameMatcher(pattern + "/*", "glob").matches(name)
    assert star == bool(re.fullmatch(re.escape(pattern) + "/[^/]*", name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        deep = NameMatcher(pattern + "/**", "glob").matches(name)
    assert deep == bool(re.fullmatch(re.escape(pattern) + "/.*", name))


def _glob_as_regex_before(pattern: str) -> str:
    """The translation every glob went through before issue 28 (its semantics are kept; its
    ``fullmatch`` backtracked exponentially in the number of stars)."""
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


ADVERSARIAL = [  # (pattern, a long name it almost matches, what it needs to match)
    ("**/" * 12 + "*.tmp/x", "a/" * 40 + "y.bin", "y.tmp/x"),  # the 43-character rule
    ("**/" * 12 + "*.csv", "a/" * 30 + "y.bin", "y.csv"),
    ("*a" * 12 + "b", "a" * 200, "b"),
    ("**a" * 20 + "b", "a" * 2000, "b"),
    ("?*" * 30 + "x", "a" * 5000, "x"),
    ("**/*" * 20 + "x", "a/" * 5000, "x"),
    ("[a]*" * 20 + "/**" * 10 + "x", "a" * 3000 + "/" * 3000, "x"),
    ("**" + "*/" * 15 + "**x", "/" * 20000, "x"),
]


@pytest.mark.parametrize(("pattern", "name", "tail"), ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_a_catastrophic_glob_matches_in_time_linear_in_name_and_pattern(
    pattern: str, name: str, tail: str
) -> None:
    """Issue 28, point 6: ``**/`` twelve times made one lifecycle put take 16.9 s. Each of
    these patterns (many stars that can trade characters) on a long name that almost
    matches is answered within a bound that holds for any glob of this size."""
    matcher = NameMatcher(pattern, "glob")
    started = time.perf_counter()
    assert matcher.matches(name) is False
    assert time.perf_counter() - started < 0.25, pattern
    assert matcher.matches(name[: -len(tail)] + tail) is True
    assert time.perf_counter() - started < 0.5, pattern


glob_patterns = st.text(alphabet="ab/.*?[]!-", min_size=1, max_size=14)
plain_names = st.text(alphabet="ab/.-]", min_size=0, max_size=24)


@given(glob_patterns, plain_names)
def test_a_glob_means_what_it_meant_before(pattern: str, name: str) -> None:
    """The linear matcher agrees with the old regex translation on every pattern it took,
    and refuses (ValueError, at construction) the ones the old one could not compile. An
    empty class (``[]``, ``[!]``) is refused too: the old translation read it as the start
    of a class that ran on into the rest of the pattern when a ``]`` followed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ``[--]``: Python's set-syntax warning
        try:
            before = re.compile(_glob_as_regex_before(pattern))
        except re.error:
            with pytest.raises(ValueError, match="invalid glob"):
                NameMatcher(pattern, "glob")
            return
        try:
            matcher = NameMatcher(pattern, "glob")
        except ValueError:
            assert "[]" in pattern or "[!]" in pattern
            return
    assert matcher.matches(name) == bool(before.fullmatch(name))


@given(glob_patterns, plain_names.map(lambda name: name * 6))
def test_both_ways_of_matching_a_glob_agree(pattern: str, name: str) -> None:
    """A glob is matched by its regex while that cannot backtrack far, else by simulating
    its positions: the two give the same answer on any name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            glob = _Glob(pattern)
        except ValueError:
            return
    assert glob._simulate(name) == (glob._regex.fullmatch(name) is not None)


def test_a_bad_glob_is_refused_when_made_not_at_its_first_name() -> None:
    for pattern in ("[]", "[!]", "x/[z-a]"):
        with pytest.raises(ValueError, match=re.escape(f"invalid glob {pattern!r}")):
            NameMatcher(pattern, "glob")
