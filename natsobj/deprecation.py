"""One wording for every renamed name or parameter, kept for one release after the rename."""

from __future__ import annotations

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
