"""A put's ``ttl`` is parsed once, where a face takes it, and travels down typed (issue 40,
point 4): Dagster's IO manager parsed it, turned it back into text and its handlers parsed
it again. Read from the source: only the option table's parser, the lifecycle rule that
checks a parsed value, and the Python face's ``put`` call the TTL parsers; the layers below
take a ``timedelta | None``."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

from natsobj.aio import expiry, put_pipeline
from natsobj.lifecycle import resolve_ttl

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *sorted((ROOT / "natsobj").rglob("*.py")),
    *sorted((ROOT / "dagster_natsobj").rglob("*.py")),
    *sorted((ROOT / "providers").rglob("*.py")),
]
PARSERS = {"parse_ttl", "coerce_ttl"}
ALLOWED = {
    "natsobj/operation_options.py",  # Option.parse: the one parser every face's values go through
    "natsobj/lifecycle.py",  # coerce_ttl: parse_ttl and the server's range, for the Python face
    "natsobj/aio/store.py",  # ObjectStore.put: the Python face, where its caller gives a ttl
}


def _calls(path: Path) -> Iterator[tuple[ast.Call, str | None]]:
    """Every call in ``path``'s source, with the name it calls (``f(...)`` or ``x.f(...)``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            yield node, func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _ttl_parses(path: Path) -> list[int]:
    lines = []
    for node, name in _calls(path):
        func = node.func
        if name in PARSERS:
            lines.append(node.lineno)
        # PUT["ttl"].parse(...): the table's row parsed by hand
        if (
            name == "parse"
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Subscript)
            and isinstance(func.value.slice, ast.Constant)
            and func.value.slice.value == "ttl"
        ):
            lines.append(node.lineno)
    return lines


def test_only_the_faces_entries_parse_a_ttl() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in SOURCES
        if str(path.relative_to(ROOT)) not in ALLOWED
        for line in _ttl_parses(path)
    ]
    assert offences == []


def test_below_the_face_a_ttl_is_typed() -> None:
    for function, parameter in (
        (put_pipeline.put, "ttl"),
        (expiry.BucketExpiry.plan, "ttl"),
        (resolve_ttl, "explicit"),
    ):
        annotation = inspect.signature(function).parameters[parameter].annotation
        assert annotation == "timedelta | None", (function.__qualname__, annotation)


# The ``get`` rows (allow_missing_digest, follow_links) are resolved where a face takes its
# users' words, once; what it hands down is a bool. The Airflow operators resolved them and
# the hook resolved the operators' bools again. (Spark resolves each operation's option map in
# one generic call of natsobj/spark/options.py, named by a variable this check does not see.)
GET_RESOLVERS = {"operation_options", "reading", "resolve", "resolved", "for_face"}
GET_FACE_ENTRIES = {
    "natsobj/cli/params.py",  # the CLI's read_options decorator
    "natsobj/fs.py",  # the filesystem's keywords
    "dagster_natsobj/io_manager.py",  # the IO manager's config
    "providers/airflow_natsobj/operators/object_store.py",  # the operators' templated fields
    "providers/airflow_natsobj/operators/copy.py",
    "providers/airflow_natsobj/operators/transform.py",
    "providers/airflow_natsobj/operators/versions.py",
}


def _get_rows_resolved(path: Path) -> list[int]:
    lines = []
    for node, name in _calls(path):
        if name not in GET_RESOLVERS:
            continue
        operations = {a.value for a in node.args if isinstance(a, ast.Constant)}
        if name == "reading" or "get" in operations:
            lines.append(node.lineno)
    return lines


def test_the_read_options_are_resolved_only_where_a_face_takes_them() -> None:
    resolving = {
        str(path.relative_to(ROOT)): lines
        for path in SOURCES
        if path.name != "operation_options.py"  # the table, which defines the resolvers
        and (lines := _get_rows_resolved(path))
    }
    assert set(resolving) == GET_FACE_ENTRIES, resolving
