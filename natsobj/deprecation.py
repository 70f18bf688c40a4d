"""One wording for every renamed name or parameter, kept for one release after the rename."""

from __future__ import annotations

import importlib
import sys
import warnings


def warn_deprecated(
    old: str, new: str, *, category: type[Warning] = DeprecationWarning, stacklevel: int = 3
) -> None:
    """Warn that ``old`` is going away and say what to write instead."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        category,
        stacklevel=stacklevel,
    )


def moved_module(old: str, new: str) -> None:
    """Stand the module ``new`` in for ``old``, the path it moved from: a shim left at the old
    path calls this, so ``import old`` gives ``new`` itself (the same module object: patching
    one patches the other) and warns once per process (``sys.modules`` then holds ``new`` under
    ``old``, so the shim never runs again)."""
    module = importlib.import_module(new)
    # 4: this function, warn_deprecated's caller's caller is the shim; the importer is next
    # (the import system's own frames are skipped by warnings)
    warn_deprecated(f"the module {old}", new, stacklevel=4)
    sys.modules[old] = module
