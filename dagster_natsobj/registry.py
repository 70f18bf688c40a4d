"""Which handler serves a value, an annotation, or an object already in the bucket."""

from __future__ import annotations

import typing
from typing import Any

from dagster_natsobj.handlers import (
    TYPE_KEY,
    ArrowHandler,
    BytesHandler,
    Handler,
    PandasHandler,
    PickleHandler,
    Target,
    TextHandler,
)
from dagster_natsobj.spark import SparkHandler
from natsobj.errors import ObjectNotFound

# Most specific first; pickle takes whatever is left.
HANDLERS: tuple[Handler, ...] = (
    BytesHandler(),
    TextHandler(),
    ArrowHandler(),
    PandasHandler(),
    SparkHandler(),
    PickleHandler(),
)
_SPARK = next(h for h in HANDLERS if isinstance(h, SparkHandler))
_BY_TYPE_NAME = {h.type_name: h for h in HANDLERS}


def handler_for_value(value: Any) -> Handler:
    return next(h for h in HANDLERS if h.accepts_value(value))


def handler_for_type(annotation: Any) -> Handler | None:
    """None for ``Any``/``object``/no annotation: the stored object then decides."""
    if annotation in (object, typing.Any) or not isinstance(annotation, type):
        return None
    return next((h for h in HANDLERS if h.accepts_type(annotation)), None)


def handler_for_stored(target: Target) -> Handler:
    """The format recorded on the object; raw bytes for objects other systems wrote.

    A Spark dataset is a prefix, so when there is no object by that name its manifest is
    looked up; ObjectNotFound is raised when neither exists.
    """
    try:
        info = target.store.get_info(target.name)
    except ObjectNotFound:
        if _SPARK.exists(target):
            return _SPARK
        raise
    return _BY_TYPE_NAME.get(info.metadata.get(TYPE_KEY, ""), _BY_TYPE_NAME["bytes"])
