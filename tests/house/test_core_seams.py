"""The seams between the core and what sits on it, read from the source (issue 29): the core
names no layer above it even by a module's name in a string, the archive restates versions
through the core's ``restate`` instead of writing records and purging subjects itself, the
object store offers no raw record publishing, and the client makes up its unique tokens with
one generator."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from natsobj import sync
from natsobj.aio import store
from natsobj.aio.offloaded import READER_GROUP
from tests.house.layers import above_the_core, core_files
from tests.source_strings import strings_outside_docstrings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "natsobj"
CORE = core_files()
ABOVE_CORE = above_the_core()


def test_the_core_names_no_layer_above_it_even_by_string() -> None:
    """As found: ``natsobj.aio.offloaded`` loaded ``"natsobj.archive.readthrough"`` by name.
    The archive now names itself, in the package's entry points."""
    offences = [
        f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.value!r}"
        for path in CORE
        for node in strings_outside_docstrings(ast.parse(path.read_text()))
        if node.value.startswith(ABOVE_CORE)
    ]
    assert offences == []


def test_the_archive_writes_no_record_and_purges_no_subject_itself() -> None:
    """As found: tiering published the restating record (``publish_meta``) and purged
    ``chunk_subject(bucket, nuid)`` itself; it restates through ``natsobj.aio.restate_write``."""
    offences = []
    for path in sorted((ROOT / "archive").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module == "natsobj.names":
                offences += [f"{where} imports {a.name}" for a in node.names if "subject" in a.name]
            if isinstance(node, ast.Attribute) and node.attr in (
                "purge",
                "publish_rollup",
                "publish_meta",
            ):
                offences.append(f"{where} uses .{node.attr}")
    assert offences == []


def test_the_object_store_publishes_no_raw_records() -> None:
    """``publish_meta`` and ``read_floor`` were public on both stores for one caller each
    (tiering, a test); records are published by ``natsobj.aio.records`` for the core's own
    writers, and the read floor is the stream layer's."""
    for cls in (store.ObjectStore, sync.ObjectStore):
        assert not hasattr(cls, "publish_meta") and not hasattr(cls, "read_floor"), cls


def test_one_nuid_generator() -> None:
    """As found: three ``NUID()`` instances (store, atomic put, consumer)."""
    made = [
        f"{path.relative_to(ROOT.parent)}:{node.lineno}"
        for path in sorted(ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "NUID"
    ]
    assert [where.split(":")[0] for where in made] == ["natsobj/aio/jetstream/nuids.py"]


def test_the_archive_is_the_installed_offloaded_reader() -> None:
    """A process that meets an offloaded object before importing the archive loads it
    through this entry point (``natsobj.aio.offloaded``): pyproject.toml declares it, and the
    installed metadata must carry it, or such reads fail as if the archive were missing."""
    declared = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]
    assert declared["entry-points"][READER_GROUP] == {"archive": "natsobj.archive.readthrough"}
    installed = [entry.value for entry in entry_points(group=READER_GROUP)]
    assert installed == ["natsobj.archive.readthrough"], (
        "natsobj's installed metadata predates this entry point: reinstall it "
        "(make, or uv pip install -e '.[all,dev]')"
    )
