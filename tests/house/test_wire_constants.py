"""Every JetStream wire name is written once, in ``natsobj/wire.py``: a header name
(``Nats-...``) or a subject under ``$JS``, ``$O`` or ``$KV`` typed anywhere else in the package
is a second copy that can drift from the first (a typo in a header name is no error: the
header is simply never found).

The check reads each module's string and bytes literals, f-string pieces included, and skips
docstrings, which are prose for the reader; comments are not literals. An error message that
names a header or a subject builds it from the constant too, so that it names what the code
sends.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "natsobj"
WIRE = PACKAGE / "wire.py"
WIRE_NAME = re.compile(r"Nats-[A-Za-z]|\$JS\b|\$O\.|\$KV\b")


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the nodes that are docstrings (a body's first statement, a bare string)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def wire_literals(source: str) -> Iterator[tuple[int, str]]:
    """(line, literal) for each literal in ``source`` that spells a wire name."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        value = node.value
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(value, str) and WIRE_NAME.search(value):
            yield node.lineno, value


def test_wire_names_are_written_only_in_wire_py() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {literal!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != WIRE
        for line, literal in wire_literals(path.read_text())
    ]
    assert not offences, "wire names outside natsobj/wire.py:\n" + "\n".join(offences)


def test_the_check_sees_what_it_looks_for() -> None:
    """Guards the check itself: each kind of literal is found, docstrings and comments are not,
    and wire.py (where the names belong) has them."""
    source = '''
"""Module docstring naming ``Nats-TTL`` and ``$JS.API``."""
HEADER = "Nats-Msg-Id"  # a comment naming Nats-Rollup
RAW = b"\\r\\nNats-Subject:"
def f(domain):
    """Docstring naming $O.<bucket>.M.>."""
    return f"$JS.{domain}.API", "$O.b.C.>", "$KV.b.k", f"a {domain} Nats-TTL header"
'''
    assert sorted(line for line, _ in wire_literals(source)) == [3, 4, 7, 7, 7, 7]
    assert len(list(wire_literals(WIRE.read_text()))) > 10
