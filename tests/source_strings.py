"""The strings a program can show, read from its source: the source checks that keep messages
from naming unshipped files or layers above the core look at these, never at docstrings."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def strings_outside_docstrings(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every string constant of ``tree`` (f-string parts included), docstrings aside."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node
