"""The package's layers, read from the source: every module is in exactly one layer, imports go
downward only, no module reaches into another module's underscore members, and ``natsobj/`` has
no import cycle.

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
A private member counts however it is reached: ``x._name``, ``getattr(x, "_name")`` (and
``hasattr``/``setattr``/``delattr``), and, in a class built on a third-party class,
``self._name``/``cls._name`` that neither the class nor a natsobj ancestor defines, and any
``super()._name`` that no natsobj ancestor defines.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.house.layers import CORE, INDEPENDENT, LAYERS, layer_of, placement

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "natsobj": ROOT / "natsobj",
    "airflow_natsobj": ROOT / "providers" / "airflow_natsobj",
    "dagster_natsobj": ROOT / "dagster_natsobj",
}

# Libraries of a face, which the core and the facade never import.
FACE_LIBRARIES = ("airflow", "dagster", "pyspark", "click", "fsspec", "aiohttp")

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
_CONNECT = (
    "nats-py Client: natsobj's connection checks TLS and the embedded server's identity in"
    " _connect_command, the last step before CONNECT is written, reading the server it reached;"
    " __init__ refuses to run without the hook (client._Connection, _has_connect_hook)"
)
_TRANSPORT_WRITER = (
    "nats-py TcpTransport: its StreamWriter, for the socket's peer (client._Connection"
    "._proven_embedded) and to drop a socket a bounded close gave up on (client._close_now)"
)
_SERVER = (
    "nats-py Client: the server last talked to, for error messages (jsapi.JetStreamApi.server),"
    " and whether its INFO names a cluster (jsapi.JetStreamApi.in_cluster)"
)
_FSSPEC = (
    "fsspec: an AsyncFileSystem implements and calls its underscored coroutines (fsspec's"
    " documented async API), and a cache implements _fetch (fs.ExactReadAhead)"
)
_READS = (
    "nats-py TcpTransport / asyncio StreamReader: the read loop takes the stream's whole"
    " buffer, up to READ_BYTES, instead of 32 KiB copied twice (socket_reads.enlarge_reads);"
    " the stream's transport receives into one kept buffer (socket_reads.ReceiveBuffer)"
)
THIRD_PARTY_PRIVATES: dict[tuple[str, str], str] = {
    ("natsobj.archive.native_exit", "_current_frames"): "CPython's sys._current_frames, a"
    " documented function (underscored as implementation-specific): which threads are alive",
    ("natsobj.gateway.workers", "_exit"): "os._exit, documented for a forked child: it ends"
    " the worker without running the parent's exit handlers and buffers a second time",
    ("natsobj.aio.jetstream.jsapi", "_process_msg"): _ROUTING,
    ("natsobj.aio.jetstream.jsapi", "_id"): _ROUTING
    + "; the subscription's sid is the routing key",
    **{
        ("natsobj.aio.jetstream.jsapi", attr): _HPUB
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
        ("natsobj.aio.jetstream.socket_reads", attr): _READS
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
    (
        "natsobj.aio.jetstream.socket_reads",
        "_max_payload",
    ): "nats-py Client: the server's max_payload"
    " from its INFO, past which a frame closes the connection (socket_reads.frame_violation)",
    **{
        ("natsobj.aio.client", attr): _CONNECT
        for attr in ("_connect_command", "_current_server", "_server_info", "_transport")
    },
    ("natsobj.aio.client", "_io_writer"): _TRANSPORT_WRITER,
    # In a module another change of issue 29 is rewriting (jsapi.py); reviewed here, the owner
    # may read nc.connected_url instead of _current_server.
    **{
        ("natsobj.aio.jetstream.jsapi", attr): _SERVER
        for attr in ("_current_server", "_server_info")
    },
    **{
        ("natsobj.fs", attr): _FSSPEC
        for attr in ("_find", "_get", "_expand_path", "_isdir", "_fetch")
    },
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


def _from_base(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    base = node.module or ""
    if node.level:
        parts = module.name.split(".")
        keep = len(parts) - node.level + (1 if module.is_package else 0)
        base = ".".join([*parts[:keep], *([base] if base else [])])
    return base


def _imports(module: Module) -> Iterator[tuple[str, int, list[str]]]:
    """(imported module, line, names taken from it) for every import in the module."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, []
        elif isinstance(node, ast.ImportFrom):
            yield _from_base(module, node), node.lineno, [alias.name for alias in node.names]


def _targets(module: Module) -> Iterator[tuple[str, int]]:
    """The natsobj modules an import loads by name: ``from pkg import sub`` is ``pkg.sub``."""
    for base, line, names in _imports(module):
        submodules = [f"{base}.{name}" for name in names if f"{base}.{name}" in MODULES]
        if submodules:
            yield from ((sub, line) for sub in submodules)
        if (base in MODULES and len(submodules) < len(names)) or not names:
            yield base, line


def _placement(module: Module) -> tuple[int, str, str]:
    """(layer index, layer, entry) of a module, read from its folder (tests/house/layers.py)."""
    placed = placement(module.path)
    assert placed, f"{module.path} is in no layer"
    return placed


@pytest.mark.unit
def test_every_module_is_in_a_layer_folder() -> None:
    misplaced = [
        str(module.path.relative_to(ROOT))
        for module in MODULES.values()
        if placement(module.path) is None
    ]
    assert not misplaced, f"modules in a folder no layer holds (tests/house/layers.py): {misplaced}"


@pytest.mark.unit
def test_every_layer_entry_exists_and_is_placed_once() -> None:
    entries = [entry for entries in LAYERS.values() for entry in entries]
    assert len(entries) == len(set(entries)), entries
    assert [entry for entry in entries if not (ROOT / entry).exists()] == []


@pytest.mark.unit
def test_every_import_goes_downward() -> None:
    """A module imports its own layer and the layers below; in a layer of peers, its own
    entry only."""
    offences = []
    for module in MODULES.values():
        layer, name, entry = _placement(module)
        for target, line in _targets(module):
            if target not in MODULES:
                continue
            target_layer, target_name, target_entry = _placement(MODULES[target])
            upward = target_layer > layer
            sideways = target_layer == layer and name in INDEPENDENT and target_entry != entry
            if upward or sideways:
                offences.append(
                    f"{module.path.relative_to(ROOT)}:{line} ({name}) imports {target}"
                    f" ({target_name})"
                )
    assert not offences, "imports that do not go downward:\n" + "\n".join(offences)


@pytest.mark.unit
def test_the_core_and_the_facade_import_no_face_library() -> None:
    offences = [
        f"{module.path.relative_to(ROOT)}:{line} imports {base}"
        for module in MODULES.values()
        if layer_of(module.path) in (*CORE, "facade")
        for base, line, _ in _imports(module)
        if base.split(".")[0] in FACE_LIBRARIES
    ]
    assert not offences, "a face's library below the faces:\n" + "\n".join(offences)


@pytest.mark.unit
def test_the_core_and_the_facade_import_no_orchestration_rule() -> None:
    """natsobj/orchestration holds what only the orchestrators' faces use; the layers under
    the faces that every face shares never import it."""
    offences = [
        f"{module.path.relative_to(ROOT)}:{line} imports {target}"
        for module in MODULES.values()
        if layer_of(module.path) in (*CORE, "facade")
        for target, line in _targets(module)
        if target in MODULES and layer_of(MODULES[target].path) == "orchestration"
    ]
    assert not offences, "an orchestration rule under the faces:\n" + "\n".join(offences)


def _origins(module: Module) -> dict[str, str]:
    """What each name bound by an import, or by a class statement, stands for."""
    found = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                found[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.ClassDef):
            found[node.name] = f"{module.name}.{node.name}"
    return found


# Bases without members of their own to reach.
_BARE_BASES = {"typing.Protocol", "typing.Generic", "typing.NamedTuple", "builtins.object"}


@dataclass
class _Ancestry:
    """What a class and its natsobj ancestors define, and whether a third-party class is
    among its ancestors (whose underscored members are then not natsobj's)."""

    defined: set[str] = field(default_factory=set)
    inherited: set[str] = field(default_factory=set)
    third_party: bool = False


def _class_privates(node: ast.ClassDef) -> set[str]:
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(child.name)
        elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Store):
            if isinstance(child.value, ast.Name) and child.value.id in ("self", "cls"):
                found.add(child.attr)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            found.add(child.id)
    return {name for name in found if _is_private(name)}


def _base_name(module: Module, base: ast.expr) -> str:
    """The dotted name a base class expression stands for (``sync.Client``:
    ``natsobj.sync.Client``; a bare builtin: ``builtins.<name>``)."""
    if isinstance(base, ast.Subscript):
        base = base.value
    text = ast.unparse(base)
    root, _, rest = text.partition(".")
    origin = _origins(module).get(root, f"builtins.{root}")
    return f"{origin}.{rest}" if rest else origin


def _find_class(dotted: str, depth: int = 0) -> tuple[Module, ast.ClassDef] | None:
    """The natsobj class statement behind a dotted name, through re-exports."""
    owner, _, name = dotted.rpartition(".")
    module = MODULES.get(owner)
    if module is None or depth > 5:
        return None
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return module, node
    origin = _origins(module).get(name)
    return _find_class(origin, depth + 1) if origin else None


def _ancestry(module: Module, node: ast.ClassDef) -> _Ancestry:
    found = _Ancestry(defined=_class_privates(node))
    for base in node.bases:
        dotted = _base_name(module, base)
        if dotted in _BARE_BASES:
            continue
        if dotted.split(".")[0] not in PACKAGES:
            found.third_party = True
            continue
        located = _find_class(dotted)
        if located is None:
            continue
        above = _ancestry(*located)
        found.inherited |= above.defined | above.inherited
        found.third_party |= above.third_party
    return found


def _reached_through_self(module: Module) -> Iterator[tuple[int, str]]:
    """(line, name) for each underscored member a class built on a third-party class reaches
    through ``self``, ``cls`` or ``super()`` that is the third-party class's."""
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        ancestry = _ancestry(module, node)
        if not ancestry.third_party:
            continue
        for child in ast.walk(node):
            if not isinstance(child, ast.Attribute) or not _is_private(child.attr):
                continue
            value = child.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                natsobjs = ancestry.defined | ancestry.inherited
            elif (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "super"
            ):
                natsobjs = ancestry.inherited
            else:
                continue
            if child.attr not in natsobjs:
                yield child.lineno, child.attr


def _reached_by_name(module: Module) -> Iterator[tuple[int, str]]:
    """(line, name) for ``getattr(x, "_name")`` and its siblings."""
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
        ):
            yield node.lineno, node.args[1].value


def _owners() -> dict[str, list[str]]:
    return {
        private: sorted(
            other.name for other in MODULES.values() if private in other.defined_privates
        )
        for other in MODULES.values()
        for private in other.defined_privates
    }


OWNERS = _owners()


def _reaches(module: Module) -> Iterator[tuple[int, str, str]]:
    """(line, name, defined in: natsobj modules, or "" for a third-party library) for each
    underscore member of another module or of a library the module uses, allow-listed or
    not."""
    for base, line, names in _imports(module):
        for name in names:
            if _is_private(name) and base in MODULES and base != module.name:
                yield line, name, base
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in module.defined_privates or node.attr in NAMEDTUPLE_API:
            continue
        yield node.lineno, node.attr, ", ".join(OWNERS.get(node.attr, []))
    for line, name in _reached_by_name(module):
        if name not in module.defined_privates:
            yield line, name, ", ".join(OWNERS.get(name, []))
    for line, name in _reached_through_self(module):
        yield line, name, ""


def _private_reaches(module: Module) -> Iterator[tuple[int, str, str]]:
    """(line, what, defined in) for each underscore member of another natsobj module used, and
    each third-party one not allow-listed."""
    for line, name, owner in _reaches(module):
        if (module.name, name) in THIRD_PARTY_PRIVATES:
            continue  # reviewed: the library's member (a natsobj one may share its name)
        if owner:
            yield line, f"uses {name}", owner
        else:
            yield line, f"uses {name} of a third-party library", "(not allow-listed)"


@pytest.mark.unit
def test_no_module_uses_another_modules_private_members() -> None:
    offences = [
        f"{module.path.relative_to(ROOT)}:{line} {what} (defined in {owner})"
        for module in MODULES.values()
        for line, what, owner in _private_reaches(module)
    ]
    assert not offences, "underscore members used across modules:\n" + "\n".join(offences)


@pytest.mark.unit
def test_every_allow_listed_private_is_still_used() -> None:
    """An allow-list entry nothing needs any more is removed, so the list stays the truth."""
    used = {(module.name, name) for module in MODULES.values() for _, name, _ in _reaches(module)}
    stale = sorted(set(THIRD_PARTY_PRIVATES) - used)
    assert not stale, f"allow-listed but no longer used: {stale}"


@pytest.mark.unit
def test_the_private_check_sees_every_way_in() -> None:
    """Guards the check itself: a third-party private reached through an attribute chain, by
    name, through ``self`` in a subclass of a library's class, and through ``super()``."""
    source = """
from nats.aio.client import Client as Connection
from natsobj.aio.client import Client

class Hooked(Connection):
    def __init__(self):
        self._mine = 1

    def _connect_command(self):
        return self._mine, self._server_info, super()._connect_command()

class Plain(Client):
    def f(self):
        return self._anything

def g(holder):
    return holder.nc._pending, getattr(holder, "_x"), hasattr(holder.nc, "_y")
"""
    probe = Module("natsobj.aio.probe", ROOT / "natsobj" / "aio" / "probe.py", ast.parse(source))
    probe.defined_privates = _privates_defined(probe.tree)
    assert sorted((line, name) for line, name, _ in _reaches(probe)) == [
        (10, "_connect_command"),
        (10, "_server_info"),
        (17, "_pending"),
        (17, "_x"),
        (17, "_y"),
    ]


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


@pytest.mark.unit
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


@pytest.mark.unit
def test_the_checks_see_the_package() -> None:
    """Guards the test itself: a path mistake would make every check above pass vacuously."""
    assert "natsobj.aio.store" in MODULES and "natsobj.archive.tiering" in MODULES
    assert "natsobj.aio.store" in _graph()["natsobj.aio.client"]
    assert layer_of(MODULES["natsobj.aio.jetstream.jsapi"].path) == "jetstream"
    assert layer_of(MODULES["natsobj.sync"].path) == "facade"
    assert layer_of(MODULES["natsobj.errors"].path) == "foundations"


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
