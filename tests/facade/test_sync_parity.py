"""The blocking facade is the async core with the waiting done for you: same public methods,
same parameters (names, kinds, defaults, annotations), same docstrings."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

import natsobj
from natsobj import aio, sync

PAIRS = [
    (natsobj.Client, aio.Client),
    (natsobj.ObjectStore, aio.ObjectStore),
    (sync.ObjectReader, aio.ObjectReader),
    (sync.ObjectWatcher, aio.ObjectWatcher),
]


def _public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def _blocking_annotation(annotation: Any) -> Any:
    """An async annotation as the facade spells it: ``AsyncIterator[X]`` (or the
    ``AsyncGenerator[X]`` of an iterator the core closes with ``aclose``) is ``Iterator[X]``."""
    if isinstance(annotation, str):
        return re.sub(r"\bAsync(Iterator|Generator)\b", "Iterator", annotation)
    return annotation


def _shape(function: Callable[..., Any]) -> tuple[list[tuple[Any, ...]], Any]:
    signature = inspect.signature(function)
    parameters = [
        (p.name, p.kind, p.default, _blocking_annotation(p.annotation))
        for p in signature.parameters.values()
    ]
    return parameters, _blocking_annotation(signature.return_annotation)


@pytest.mark.parametrize(("blocking", "core"), PAIRS, ids=[c.__name__ for c, _ in PAIRS])
def test_every_public_method_has_the_core_signature_and_docstring(blocking, core) -> None:
    core_methods = _public_methods(core)
    blocking_methods = _public_methods(blocking)
    assert sorted(set(core_methods) - set(blocking_methods)) == []
    for name, method in core_methods.items():
        assert _shape(blocking_methods[name]) == _shape(method), f"{core.__name__}.{name}"
        assert method.__doc__, f"aio.{core.__name__}.{name} has no docstring"
        assert blocking_methods[name].__doc__ == method.__doc__, f"{core.__name__}.{name}"


def test_connect_matches_the_core() -> None:
    assert _shape(natsobj.connect) == _shape(aio.connect)
    assert natsobj.connect.__doc__ == aio.connect.__doc__


def test_no_blocking_method_hides_its_keywords() -> None:
    """``**options: Any`` would erase the signature for help(), IDEs and type checkers;
    ``**settings: Unpack[StoreSettings]`` (PEP 692) names every keyword and its type."""
    for blocking, _ in PAIRS:
        for name, method in _public_methods(blocking).items():
            for p in inspect.signature(method).parameters.values():
                if p.kind is inspect.Parameter.VAR_KEYWORD:
                    assert str(p.annotation).startswith("Unpack["), f"{blocking.__name__}.{name}"


def test_exit_hands_the_real_exception_to_the_core(store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.put("x", b"payload")
    seen: list[tuple[Any, ...]] = []
    original = aio.Client.__aexit__

    async def recording_aexit(self: aio.Client, *exc: Any) -> None:
        seen.append(exc)
        await original(self, *exc)

    monkeypatch.setattr(aio.Client, "__aexit__", recording_aexit)
    client = natsobj.connect(store.aio.client.settings)
    boom = ValueError("boom")
    with pytest.raises(ValueError, match="boom"), client:
        raise boom
    assert seen == [(ValueError, boom, boom.__traceback__)]
    assert client.aio.nc is None  # closed all the same


def test_an_error_inside_get_reaches_the_reader_and_propagates(store) -> None:
    store.put("x", b"a" * 300_000, chunk_size=1024)
    with pytest.raises(KeyError), store.get("x") as reader:
        reader.read(10)
        raise KeyError("stop reading")
    assert store.get_bytes("x") == b"a" * 300_000  # the store is usable after the abandoned read
