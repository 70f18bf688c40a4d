"""Which extra brings which face's libraries, checked where the face is imported: a missing
library then reads "natsobj.spark needs the spark extra: pip install 'natsobj[spark]'" instead
of "No module named 'pyarrow'", a library the user never asked for by name."""

from __future__ import annotations

import importlib.util

from natsobj.errors import MissingExtra

# The top-level modules each extra of pyproject.toml brings, as the faces import them
# (tests/house/test_packaging.py keeps the two in step).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "pyarrow", "pandas"),
    "archive": ("obstore", "pyarrow"),
    "airflow": ("airflow",),
    "dagster": ("dagster",),
    "polars": ("polars", "pyarrow"),
    "arrow": ("pyarrow",),
    # natsobj.pipes, the external process's side of Dagster Pipes: no Dagster, only its
    # light protocol package
    "pipes": ("dagster_pipes",),
    "gateway": ("aiohttp", "awscrt", "prometheus_client"),
}


def require_extra(extra: str, face: str) -> None:
    """Raise ``MissingExtra`` naming ``extra`` if one of its modules cannot be found; called
    first thing in the face's package. Looks the modules up without importing them, so a face
    that imports its libraries lazily stays as quick to import as it was."""
    for module in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # an import hook that refuses the module
            found = False
        if not found:
            raise MissingExtra.of(face, extra, module)
