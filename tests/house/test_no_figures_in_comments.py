"""No benchmark result in a code comment or docstring: code keeps the invariant that justifies
a choice, and a figure that matters lives in docs/performance.md (which cites BENCHMARKS.md),
where the next run can replace it. A figure in a comment outlives the code it was measured on.

The rule, per sentence of a comment block or docstring (help strings, messages and other
literals are not read: ``"default 128 KiB"`` states a default, not a result). A sentence
narrates a measurement when it says any of:

- where it was measured: ``on the 2-core benchmark machine``, ``on this machine`` (for the
  machine the code runs on, say "local" or "this host"), ``the benchmark's columns``;
- a measured outcome: ``measured faster``, ``was the faster``, ``in one run``, ``from run to
  run``;
- a rate: a number per second (``900 MiB/s``, ``40k rows/s``);
- a speed-up or share: ``3x faster``, ``twice as long``, ``half again as long``, ``a third of
  encode_name's cost``, ``was most of the parsing time``, ``costs most of a transfer``,
  ``cuts the passes by about ten``;
- a timing as a result: two sub-second timings in one sentence (per-size timings), or a
  number with ``ms``/``µs``/``s``/``%`` beside ``took``, ``takes``, ``spent``, ``measured``,
  ``faster``, ``slower``, ``benchmark`` or ``latency``.

Not narration, and not flagged: a protocol or library fact with its number (``nats-server's
2 MiB window``, ``waits up to 30 s``), a constant's value in words (``backoff from 10 ms
doubling``), a bound (``more than a fifth of the bytes they carry``), and a pointer to where
the figures are (``docs/performance.md``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
TREES = (ROOT / "natsobj", ROOT / "dagster_natsobj", ROOT / "providers")

_NUM = r"\d[\d,_]*(?:\.\d+)?"
_SMALL = r"(?:\d+|two|three|four|five|ten|half)"
_RATIO = r"(?:a (?:third|quarter|fifth|tenth|half)|half|most|the bulk|" + _NUM + r" ?%)"
NARRATION = [
    re.compile(
        r"\bbenchmark(?:'s| machine| host| box| run)|\b\d+-core\b"
        r"|\bon (?:this|my|our|the) (?:benchmark |test |dev )?(?:machine|laptop|box)\b",
        re.I,
    ),
    re.compile(
        r"\bmeasured\b[^;]*?\b(?:faster|slower|quicker|cheaper|even|best)\b"
        r"|\b(?:was|were|came out|ran)\s+(?:the\s+)?(?:faster|slower|quicker)\b"
        r"|\bfrom run to run\b|\bin one run\b",
        re.I,
    ),
    re.compile(rf"{_NUM} ?k? ?(?:[KMGT]i?B|[kMG]B|ops|rows|msgs?|objects|records)/s\b"),
    re.compile(
        rf"{_NUM} ?[x\u00d7] (?:as )?(?:faster|slower|quicker|longer|shorter|more|less|fewer)\b"
        rf"|\b(?:{_NUM}|two|three|four|five|ten|several) times"
        r" (?:as|faster|slower|more|less|what)\b"
        r"|\b(?:twice|half again|half) as (?:much|long|fast|slow|many)\b",
        re.I,
    ),
    re.compile(
        rf"\b{_RATIO} of [^;]{{0,60}}'s (?:cost|time|read|write|run|work|listing|CPU)\b"
        rf"|\b(?:was|were|is) {_RATIO} of\b|\bcosts? (?:most|half|the bulk) of\b"
        rf"|\b(?:cuts?|reduces?|saves?|speeds? up)\b[^;]*?\bby (?:about |roughly |some )?"
        rf"(?:a factor of )?{_SMALL}\b",
        re.I,
    ),
]
_TIMING = re.compile(rf"{_NUM} ?(?:ms|µs|us|ns)\b")
_FIGURE = re.compile(rf"{_NUM} ?(?:ms|µs|us|ns|s|%)(?!\w)")
_MEASURING = re.compile(
    r"\b(?:took|takes|spent|measured|faster|slower|benchmarks?|latency|timings?)\b", re.I
)


def narrates(sentence: str) -> bool:
    if any(pattern.search(sentence) for pattern in NARRATION):
        return True
    if len(_TIMING.findall(sentence)) >= 2:
        return True
    return bool(_FIGURE.search(sentence) and _MEASURING.search(sentence))


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(`*-])", " ".join(text.split()))


def _prose(source: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each comment block (consecutive comment lines) and docstring."""
    block: list[str] = []
    start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        if block and token.start[0] != last + 1:
            yield start, "\n".join(block)
            block = []
        if not block:
            start = token.start[0]
        block.append(token.string.lstrip("#").strip())
        last = token.start[0]
    if block:
        yield start, "\n".join(block)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                yield node.body[0].lineno, docstring


def narration(source: str) -> Iterator[tuple[int, str]]:
    """(line, sentence) for each sentence of a comment or docstring that narrates a figure."""
    for start, text in _prose(source):
        for sentence in _sentences(text):
            if narrates(sentence):
                words = sentence.split()[:4]
                found = re.search(r"\s+".join(map(re.escape, words)), text)
                yield start + (text[: found.start()].count("\n") if found else 0), sentence


def test_no_comment_or_docstring_narrates_a_figure() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {sentence}"
        for tree in TREES
        for path in sorted(tree.rglob("*.py"))
        for line, sentence in narration(path.read_text())
    ]
    assert not offences, (
        "figures in comments (keep the invariant here, the figure in docs/performance.md):\n"
        + "\n".join(offences)
    )


NARRATED = [
    "On the 2-core benchmark machine there is none.",
    "Hashing inline measured faster there for get_file.",
    "On one replica today's put was the faster in every class.",
    "The batch was faster up to 64 KiB, and from 256 KiB on no faster (from run to run).",
    "Chosen by benchmarks/ranges.py, atomic batch against today's put, in one run.",
    "Listing reaches 900 MiB/s.",
    "The new parser is 3x faster than the old one.",
    "Cold listings took half again as long.",
    "Pages of names cost about twice as much per name.",
    "This is a third of ``encode_name``'s cost.",
    "Its per-call overhead was most of the parsing time.",
    "Its own costs most of a large transfer.",
    "Reading up to READ_BYTES cuts the passes by about ten.",
    "A tenth of a one-million-row part's read.",
    "1 KiB: 0.3 ms, 1 MiB: 2.1 ms.",
    "fsspec's default 4 MiB block fetches several times what reading without a cache does.",
    "A put took 40 ms.",
    "The file is smaller on the benchmark's columns.",
    "It runs well on this machine.",
]
NOT_NARRATED = [
    "Flow control keeps the server from running more than its 2 MiB window ahead.",
    "nats-py's drain alone waits up to 30 s on a server that stopped answering.",
    "The wait for a lagging replica: backoff from 10 ms doubling to the cap.",
    "Chunks are refused when their headers cost more than a fifth of the bytes they carry.",
    "Reads go through a block of one default chunk (128 KiB).",
    "The same, only slower, never wrong.",
    "A prefix listing costs its matches (docs/performance.md).",
    "The files kept locally for this bucket's earlier incarnations.",
]


def test_the_rule_tells_narration_from_facts() -> None:
    """Guards the rule itself, with the narration it was written against and the facts it
    must leave alone."""
    assert [s for s in NARRATED if not narrates(s)] == []
    assert [s for s in NOT_NARRATED if narrates(s)] == []
    source = '''
"""Docstring.

It took 40 ms on this machine."""
# A comment block whose sentence
# spans lines: 3x faster.
HELP = "default 128 KiB, 3x faster"
'''
    assert [line for line, _ in narration(source)] == [5, 4]
