"""Which handler serves a value, an annotation, or an object already in the bucket.

The registry is open: ``register_handler`` adds a handler for your own types ahead of the
built-in ones, so it wins over the pickle fallback (and over a built-in for the same class).
"""

from __future__ import annotations

import typing
from typing import Any

from dagster_natsobj.handlers import (
    TYPE_KEY,
    ArrowHandler,
    BytesHandler,
    Handler,
    JsonHandler,
    PandasHandler,
    PickleHandler,
    PolarsHandler,
    PolarsLazyHandler,
    Target,
    TextHandler,
)
from dagster_natsobj.spark import SparkHandler
from natsobj.errors import ObjectNotFound

_SPARK = SparkHandler()
_PICKLE = PickleHandler()
# Most specific first; JSON takes the JSON-native values left, pickle whatever is left then.
BUILT_IN: tuple[Handler, ...] = (
    BytesHandler(),
    TextHandler(),
    ArrowHandler(),
    PandasHandler(),
    PolarsHandler(),
    PolarsLazyHandler(),
    _SPARK,
    JsonHandler(),
    _PICKLE,
)
_registered: list[Handler] = []


def handlers() -> tuple[Handler, ...]:
    """Registered handlers (latest first), then the built-in ones."""
    return (*reversed(_registered), *BUILT_IN)


def register_handler(handler: Handler) -> Handler:
    """Store values of ``handler.classes()`` with ``handler``; returns it (for unregistering).

    ``type_name`` must be unique: it is written on every object and picks the handler that
    loads it back."""
    if not isinstance(handler, Handler):
        raise TypeError(f"register a dagster_natsobj.Handler instance, not {handler!r}")
    if not handler.type_name or not handler.format:
        raise ValueError(f"{type(handler).__name__} needs a format and a type_name")
    clash = next((h for h in handlers() if h.type_name == handler.type_name), None)
    if clash is not None and clash is not handler:
        raise ValueError(
            f"type_name {handler.type_name!r} is taken by {type(clash).__name__}; pick another"
        )
    if handler not in _registered:
        _registered.append(handler)
    return handler


def unregister_handler(handler: Handler) -> None:
    """Stop using a registered handler (objects it stored then load as raw bytes)."""
    _registered.remove(handler)


def handler_for_value(value: Any) -> Handler:
    return next(h for h in handlers() if h.accepts_value(value))


def handler_for_output(annotation: Any, value: Any) -> Handler:
    """The handler of the output's annotation; the value's when the annotation names no
    format (none, ``Any``, or a type only pickle holds, such as ``dict``), so a JSON-native
    value is stored as JSON under ``-> dict`` too and is pickled only when it must be."""
    handler = handler_for_type(annotation)
    if handler is None or handler is _PICKLE:
        return handler_for_value(value)
    return handler


def handler_for_type(annotation: Any) -> Handler | None:
    """None for ``Any``/``object``/no annotation: the stored object then decides. A generic
    such as ``list[int]`` is its class: only pickle can hold it, so the annotation asks for it."""
    annotation = typing.get_origin(annotation) or annotation
    if annotation in (object, typing.Any) or not isinstance(annotation, type):
        return None
    return next((h for h in handlers() if h.accepts_type(annotation)), None)


def handler_for_stored(target: Target) -> Handler:
    """The format recorded on the object (on the version the target names); raw bytes for
    objects other systems wrote.

    A Spark dataset is a prefix, so when there is no object by that name its manifest is
    looked up; ObjectNotFound is raised when neither exists.
    """
    try:
        info = target.store.get_info(target.name, version=target.version)
    except ObjectNotFound:
        if target.version is None and _SPARK.exists(target):
            return _SPARK
        raise
    by_type_name = {h.type_name: h for h in reversed(handlers())}
    return by_type_name.get(info.metadata.get(TYPE_KEY, ""), by_type_name["bytes"])
