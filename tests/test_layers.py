"""The package's layers, read from the source: imports go downward only, no module reaches
into another module's underscore members, and ``natsobj/`` has no import cycle.

Every import counts wherever it is written (module level, inside a function, or under
``TYPE_CHECKING``): a lazy import is still an edge that ties the layers together, and a
``TYPE_CHECKING`` one still makes the modules impossible to read apart. Imports by a string
(``importlib.import_module``) are not edges: that is how the core finds a plugin (the
archive's offloaded reader, see ``natsobj.aio.offloaded``) without depending on it.

The underscore check knows which names each natsobj module defines (functions, classes,
methods, module and instance attributes); ``x._name`` with ``x`` not ``self``/``cls`` fails
when ``_name`` is defined in another natsobj module and not in the module that reads it.
Private members of third-party libraries are not natsobj's to make public: each one used is
listed in ``THIRD_PARTY_PRIVATES`` with the reason, so a new one fails until it is reviewed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "natsobj": ROOT / "natsobj",
    "airflow_natsobj": ROOT / "providers" / "airflow_natsobj",
    "dagster_natsobj": ROOT / "dagster_natsobj",
}

# The async core and the shared modules under every face.
CORE_PREFIXES = ("natsobj.aio",)
CORE_MODULES = {
    f"natsobj.{name}"
    for name in (
        "model",
        "names",
        "errors",
        "wire",
        "settings",
        "matching",
        "paths",
        "name_index",
        "lifecycle",
        "parsing",
        "hints",
        "cursors",
        "changefeed",
        "record_fields",
    )
}
# What the core must never import: the layers above it.
ABOVE_CORE = (
    "natsobj.archive",
    "natsobj.spark",
    "natsobj.cli",
    "natsobj.fs",
    "airflow_natsobj",
    "dagster_natsobj",
)

# (module, attribute): why natsobj touches a third-party library's private member. These are
# issue 24 item 4's matter (bound nats-py, or check each attribute and fall back); listed one
# by one so that a new one fails here until someone has looked at it.
_ROUTING = (
    "nats-py Client: replies and consumer deliveries are routed to their handler before"
    " nats-py builds a Msg for them (jsapi.JetStreamApi.start)"
)
_HPUB = (
    "nats-py Client: a large publish is queued as three pieces instead of nats-py's two"
    " concatenations (jsapi.JetStreamApi._write_hpub), with nats-py's own limits and flushing"
)
_READS = (
    "nats-py TcpTransport / asyncio StreamReader: the read loop takes the stream's whole"
    " buffer, up to READ_BYTES, instead of 32 KiB copied twice (socket_reads.enlarge_reads);"
    " the stream's transport receives into one kept buffer (socket_reads.ReceiveBuffer)"
)
THIRD_PARTY_PRIVATES: dict[tuple[str, str], str] = {
    ("natsobj.archive.native_exit", "_current_frames"): "CPython's sys._current_frames, a"
    " documented function (underscored as implementation-specific): which threads are alive",
    ("natsobj.aio.jsapi", "_process_msg"): _ROUTING,
    ("natsobj.aio.jsapi", "_id"): _ROUTING + "; the subscription's sid is the routing key",
    **{
        ("natsobj.aio.jsapi", attr): _HPUB
        for attr in (
            "_pending",
            "_pending_data_size",
            "_max_pending_size",
            "_flush_pending",
            "_flush_queue",
            "_max_payload",
        )
    },
    **{
        ("natsobj.aio.socket_reads", attr): _READS
        for attr in (
            "_transport",
            "_io_reader",
            "_ps",
            "_limit",
            "_buffer",
            "_eof",
            "_exception",
            "_wait_for_data",
            "_maybe_resume_transport",
        )
    },
    ("natsobj.aio.socket_reads", "_max_payload"): "nats-py Client: the server's max_payload"
    " from its INFO, past which a frame closes the connection (socket_reads.frame_violation)",
}

# Public API of named tuples (``urlparse(...)._replace``), underscored only so that it cannot
# clash with a field's name.
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    defined_privates: set[str] = field(default_factory=set)

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _load() -> dict[str, Module]:
    modules = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            name = _module_name(package, root, path)
            tree = ast.parse(path.read_text(), str(path))
            modules[name] = Module(name, path, tree, _privates_defined(tree))
    return modules


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _privates_defined(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                found.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
    return {name for name in found if _is_private(name)}


MODULES = _load()


def _imports(module: Module) -> Iterator[tuple[str, int, list[str]]]:
    """(imported module, line, names taken from it) for every import in the module."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.name.split(".")
                keep = len(parts) - node.level + (1 if module.is_package else 0)
                base = ".".join([*parts[:keep], *([base] if base else [])])
            yield base, node.lineno, [alias.name for alias in node.names]


def _targets(module: Module) -> Iterator[tuple[str, int]]:
    """The natsobj modules an import loads by name: ``from pkg import sub`` is ``pkg.sub``."""
    for base, line, names in _imports(module):
        submodules = [f"{base}.{name}" for name in names if f"{base}.{name}" in MODULES]
        if submodules:
            yield from ((sub, line) for sub in submodules)
        if (base in MODULES and len(submodules) < len(names)) or not names:
            yield base, line


def _is_core(name: str) -> bool:
    return name in CORE_MODULES or any(
        name == prefix or name.startswith(prefix + ".") for prefix in CORE_PREFIXES
    )


def _above_core(name: str) -> bool:
    return any(name == layer or name.startswith(layer + ".") for layer in ABOVE_CORE)


def test_the_core_imports_no_layer_above_it() -> None:
    offences = [
        f"{module.path.relative_to(ROOT)}:{line} imports {base}"
        for module in MODULES.values()
        if _is_core(module.name)
        for base, line, names in _imports(module)
        if _above_core(base) or any(_above_core(f"{base}.{name}") for name in names)
    ]
    assert not offences, "the core imports a layer above it:\n" + "\n".join(offences)


def _private_reaches(module: Module) -> Iterator[tuple[int, str, str]]:
    """(line, what, defined in) for each underscore member of another natsobj module used."""
    owners = {
        private: sorted(
            other.name for other in MODULES.values() if private in other.defined_privates
        )
        for other in MODULES.values()
        for private in other.defined_privates
    }
    for base, line, names in _imports(module):
        for name in names:
            if _is_private(name) and base in MODULES and base != module.name:
                yield line, f"imports {name}", base
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in module.defined_privates or node.attr in NAMEDTUPLE_API:
            continue
        if (module.name, node.attr) in THIRD_PARTY_PRIVATES:
            continue
        defined_in = owners.get(node.attr)
        if defined_in:
            yield node.lineno, f"uses .{node.attr}", ", ".join(defined_in)
        else:
            yield node.lineno, f"uses .{node.attr} of a third-party library", "(not allow-listed)"


def test_no_module_uses_another_modules_private_members() -> None:
    offences = [
        f"{module.path.relative_to(ROOT)}:{line} {what} (defined in {owner})"
        for module in MODULES.values()
        for line, what, owner in _private_reaches(module)
    ]
    assert not offences, "underscore members used across modules:\n" + "\n".join(offences)


def test_every_allow_listed_private_is_still_used() -> None:
    """An allow-list entry nothing needs any more is removed, so the list stays the truth."""
    used = {
        (module.name, node.attr)
        for module in MODULES.values()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Attribute)
    }
    stale = sorted(set(THIRD_PARTY_PRIVATES) - used)
    assert not stale, f"allow-listed but no longer used: {stale}"


def _graph() -> dict[str, dict[str, int]]:
    return {
        module.name: {
            target: line
            for target, line in _targets(module)
            if target.startswith("natsobj") and target != module.name
        }
        for module in MODULES.values()
        if module.name.startswith("natsobj")
    }


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_inside_natsobj() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    described = [
        " <-> ".join(cycle)
        + "\n    "
        + "\n    ".join(
            f"{source} -> {target} (line {line})"
            for source in cycle
            for target, line in graph[source].items()
            if target in cycle
        )
        for cycle in cycles
    ]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_the_checks_see_the_package() -> None:
    """Guards the test itself: a path mistake would make every check above pass vacuously."""
    assert "natsobj.aio.store" in MODULES and "natsobj.archive.tiering" in MODULES
    assert "natsobj.aio.store" in _graph()["natsobj.aio.client"]


def test_a_process_that_never_meets_an_offloaded_object_never_imports_the_archive(
    nats_url: str,
) -> None:
    """The offloaded reader is a registration the archive makes (``natsobj.aio.offloaded``):
    put, get, list and status of ordinary objects load nothing of ``natsobj.archive``."""
    script = f"""
import sys, uuid
import natsobj
client = natsobj.connect({nats_url!r})
store = client.create_store("t" + uuid.uuid4().hex[:12])
store.put("a", b"x" * 300_000, chunk_size=65536)
store.put("b", b"y")
assert store.get_bytes("a") == b"x" * 300_000 and store.get_bytes("b") == b"y"
assert [info.name for info in store.list()] == ["a", "b"]
store.status()
client.delete_store(store.bucket)
client.close()
print(sorted(name for name in sys.modules if name.startswith("natsobj.archive")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
