"""The layers of the code, one definition: a layer is a set of folders; a module's layer is
its folder's. The package's root holds the foundations, and, listed one by one, the few public
modules there that are not (the blocking facade and the single-file faces, whose import paths
are the API). A folder entry holds everything beneath it unless a deeper entry takes a
subfolder (``natsobj/aio/jetstream`` under ``natsobj/aio``); ``natsobj`` holds its own files only,
so a new folder under it must be placed here. tests/house/test_layers.py and test_core_seams.py
read it.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Bottom up: a module imports from its own layer and the ones below it.
LAYERS: dict[str, tuple[str, ...]] = {
    # The vocabulary every layer shares (errors, model, names, settings, the option tables, ...),
    # this machine's state, and S3's rules that need no HTTP server.
    "foundations": ("natsobj", "natsobj/local", "natsobj/s3"),
    # nats.go's JetStream layer: API requests, consumers, publishing, the connection's reads.
    "jetstream": ("natsobj/aio/jetstream",),
    # The async core: the object store on JetStream.
    "core": ("natsobj/aio",),
    # The blocking facade over the core, and the process's shared connection.
    "facade": (
        "natsobj/__init__.py",
        "natsobj/sync.py",
        "natsobj/shared.py",
        "natsobj/placement.py",
    ),
    # Rules only the orchestrators' faces use.
    "orchestration": ("natsobj/orchestration",),
    # What the faces are built from: each stands on the layers below alone. (natsobj/pipes.py
    # is what a Pipes process calls and what dagster_natsobj.pipes takes its names from.)
    "services": (
        "natsobj/archive",
        "natsobj/fs.py",
        "natsobj/spark",
        "natsobj/pipes.py",
        "natsobj/gateway",
    ),
    # The faces users call: none depends on another.
    "faces": (
        "natsobj/cli",
        "natsobj/arrow.py",
        "natsobj/polars.py",
        "natsobj/upath.py",
        "providers/airflow_natsobj",
        "dagster_natsobj",
    ),
}
# Layers whose entries are peers: one never imports another.
INDEPENDENT = {"services", "faces"}
# The core, in the wide sense: everything under the blocking facade.
CORE = ("foundations", "jetstream", "core")
# The root folder, whose entry holds its own files only.
PACKAGE_ROOT = "natsobj"


def _covers(entry: str, relative: str) -> bool:
    if entry.endswith(".py"):
        return relative == entry
    if entry == PACKAGE_ROOT:
        return relative.count("/") == 1 and relative.startswith(entry + "/")
    return relative.startswith(entry + "/")


def placement(path: Path) -> tuple[int, str, str] | None:
    """(layer index, layer, entry) of the nearest entry holding the file, or None."""
    relative = path.resolve().relative_to(REPO).as_posix()
    found = [
        (len(entry), index, layer, entry)
        for index, (layer, entries) in enumerate(LAYERS.items())
        for entry in entries
        if _covers(entry, relative)
    ]
    if not found:
        return None
    _, index, layer, entry = max(found)
    return index, layer, entry


def layer_of(path: Path) -> str | None:
    placed = placement(path)
    return placed[1] if placed else None


def module_name(entry: str) -> str:
    """The dotted module an entry is (``providers/`` is not part of the module's name)."""
    dotted = entry.removeprefix("providers/").removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")


def is_shim(tree: ast.Module) -> bool:
    """A module left at a moved module's old path (``natsobj.deprecation.moved_module``)."""
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "moved_module"
        for node in tree.body
    )


def core_files() -> list[Path]:
    """The core's modules (the layers under the facade), shims left out."""
    return [
        path
        for path in sorted((REPO / "natsobj").rglob("*.py"))
        if layer_of(path) in CORE and not is_shim(ast.parse(path.read_text()))
    ]


def above_the_core() -> tuple[str, ...]:
    """The dotted names of what sits above the core (the package itself left out: every
    module's name starts with it)."""
    names = list(LAYERS)
    above = names[names.index(CORE[-1]) + 1 :]
    return tuple(
        module_name(entry)
        for layer in above
        for entry in LAYERS[layer]
        if module_name(entry) != PACKAGE_ROOT
    )
