"""Which Python values JSON holds exactly: stored as JSON, they load back equal and of the
same types, so a reader needs no pickle (which runs code) to get them.

JSON-native means ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``,
``bool`` and ``None``, nested in any way, each of exactly that class. Anything else would
come back as something else and is refused here rather than changed: a tuple as a list, an
``int`` key as a string, NaN or infinity (not JSON at all), an ``IntEnum`` as a plain int, an
``OrderedDict`` or ``defaultdict`` as a plain dict. A container reached twice (shared, or a
cycle) is refused too: JSON would copy or never end where a pickle keeps the references.
Nesting deeper than ``MAX_DEPTH`` is refused, as Python's JSON parser recurses once per level,
and so is an ``int`` longer than Python converts to text (``sys.get_int_max_str_digits``).
A stored JSON value that cannot be read back (nested too deep, such an int: a writer of the
bucket can put one) is ``BadJsonValue``, never a bare ``RecursionError``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from natsobj.errors import NatsObjError

MAX_DEPTH = 500
_SCALARS = (str, bool, type(None))


class BadJsonValue(NatsObjError, ValueError):
    """A stored JSON value Python's parser cannot read back: nested too deep for its
    recursion, or holding an int longer than it converts."""


def _int_fits(value: int) -> bool:
    """Whether Python writes and reads ``value`` as JSON (its digits within the limit)."""
    limit = sys.get_int_max_str_digits()
    if limit == 0 or value.bit_length() < 3 * limit:  # under 3 bits a digit: fewer digits
        return True
    try:
        str(value)  # Python refuses a number over the limit before converting it
    except ValueError:
        return False
    return True


def is_json_native(value: Any) -> bool:
    """Whether ``value`` round-trips through JSON unchanged (the module's rule). Each
    container and scalar is looked at once, without recursion."""
    seen: set[int] = set()
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is int:
            if not _int_fits(item):
                return False
            continue
        if kind is float:
            if not math.isfinite(item):
                return False
            continue
        if kind is not dict and kind is not list:
            return False
        if depth >= MAX_DEPTH or id(item) in seen:
            return False
        seen.add(id(item))
        if kind is dict:
            if any(type(key) is not str for key in item):
                return False
            pending.extend((child, depth + 1) for child in item.values())
        else:
            pending.extend((child, depth + 1) for child in item)
    return True


def write_json(value: Any, path: Path) -> None:
    """Write a JSON-native ``value`` to ``path``, streamed as it is encoded. ASCII with
    ``\\u`` escapes, so any ``str`` (a lone surrogate too) is written and read back as it was;
    NaN and infinity are refused, not written as JavaScript."""
    with path.open("w", encoding="ascii") as f:
        json.dump(value, f, allow_nan=False, separators=(",", ":"))


def read_json(path: Path) -> Any:
    """The value of the JSON file ``path``; ``NaN``/``Infinity`` tokens, which no JSON
    writer emits, are refused."""
    try:
        with path.open("r", encoding="utf-8") as f:
            return json.load(f, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadJsonValue(
            "the stored JSON value nests deeper than Python's parser reads"
        ) from None
    except ValueError as exc:
        raise BadJsonValue(f"the stored JSON value cannot be read: {exc}") from None


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")
