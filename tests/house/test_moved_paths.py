"""The old paths of moved modules keep working for one release: each shim hands out the moved
module itself, with one DeprecationWarning that names the new path; natsobj's own code and
tests import none of them. The shims are found in the tree (a module that calls
``natsobj.deprecation.moved_module``), so this test names no old path itself."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.house.layers import REPO, is_shim

pytestmark = pytest.mark.unit

SOURCES = ("natsobj", "providers", "dagster_natsobj", "pyspark_natsobj", "tests", "benchmarks")


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


SHIMS = {
    _dotted(path): ast.literal_eval(node.value.args[1])
    for path in sorted((REPO / "natsobj").rglob("*.py"))
    if is_shim(tree := ast.parse(path.read_text()))
    for node in tree.body
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
}


def test_every_shim_gives_the_moved_module_and_warns_once() -> None:
    assert SHIMS, "no shim found: the check would pass vacuously"
    script = f"""
import importlib, json, sys, warnings
found = {{}}
for old, new in {sorted(SHIMS.items())!r}:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(f"import {{old}}")
        first = sys.modules[old]
        exec(f"import {{old}}")
        again = sys.modules[old]
    found[old] = [first is importlib.import_module(new), again is first,
                  [(w.category.__name__, str(w.message), w.filename) for w in caught]]
print(json.dumps(found))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout)
    for old, new in SHIMS.items():
        same, again, caught = found[old]
        assert same and again, old
        assert len(caught) == 1, (old, caught)
        category, message, filename = caught[0]
        assert category == "DeprecationWarning" and old in message and new in message
        assert filename == "<string>", f"{old}: the warning points at {filename}, not the importer"


@pytest.mark.parametrize("root", SOURCES)
def test_no_code_of_the_repository_imports_an_old_path(root: str) -> None:
    offences = []
    for path in sorted((REPO / root).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            offences += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names if n in SHIMS]
    assert offences == []
