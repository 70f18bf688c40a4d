"""The operations' options (``natsobj.operation_options``) as Dagster takes them: config fields
named, described and checked by their row, resolved with the table's Dagster defaults.

Dagster reads config fields from class bodies and gives each field one scalar type, so a field
that takes a duration, a TTL or a size is text (``"5m"``, ``"never"``, ``"100MB"``, ``"300"``):
a number or a ``timedelta`` given in Python becomes that text, so ``give_up_after=300.0``
keeps working. A field's default is None, meaning the table's default for Dagster: this
package writes no default of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from natsobj.docs import doc_url
from natsobj.operation_options import OPERATIONS, Face, Kind, Option, render_default, resolve

FACE = Face.DAGSTER


def option(operation: str, name: str) -> Option:
    """The table's row of ``operation``'s option ``name``, which Dagster must take."""
    row = OPERATIONS[operation][name]
    if not row.takes(FACE):
        raise KeyError(f"{operation}.{name} is not a Dagster option in natsobj.operation_options")
    return row


def config_field(operation: str, name: str, note: str = "") -> Any:
    """The config field of an option: default None (the table's Dagster default), and the
    row's help, values and default (then ``note``, what this field adds) as its description."""
    row = option(operation, name)
    default = row.default_for(FACE)
    text = f"{row.help} Takes {row.describe()}."
    if default is not None:
        text += f" Unset: {render_default(default)} ({doc_url('options')})."
    return Field(default=None, description=f"{text} {note}".strip())


def as_config(row: Option, value: object) -> Any:
    """``value`` checked by the row's parser, in its config field's type: a bool or a count
    as parsed, anything else as text (the user's own text, or a number of seconds)."""
    if value is None:
        return None
    parsed = row.parse(value)  # a ValueError naming the option
    if row.kind in (Kind.BOOL, Kind.COUNT):
        return parsed
    if isinstance(value, str):
        return value
    return str(parsed.total_seconds()) if isinstance(parsed, timedelta) else str(parsed)


def table_validator(*operations: str) -> Any:
    """A before-validator for a config class's option fields of ``operations``: every value,
    from Python or from run config, goes through ``as_config`` (so a typo fails when the
    config is built)."""
    rows = {
        row.spelled(FACE): row
        for operation in operations
        for row in OPERATIONS[operation].values()
        if row.takes(FACE)
    }

    def check(cls: type, value: object, info: ValidationInfo) -> Any:
        return as_config(rows[str(info.field_name)], value)

    return field_validator(*rows, mode="before", check_fields=False)(classmethod(check))


def resolved(
    operation: str, given: Mapping[str, object] | object, *, where: str = ""
) -> dict[str, Any]:
    """Every option of ``operation`` Dagster takes, parsed, the table's defaults applied, by
    core name; ``given`` is keyed by the Dagster spelling, or is a config object whose fields
    are so named."""
    by_name = {
        name: given.get(row.spelled(FACE))
        if isinstance(given, Mapping)
        else getattr(given, row.spelled(FACE))
        for name, row in OPERATIONS[operation].items()
        if row.takes(FACE)
    }
    return resolve(FACE, operation, by_name, where=where)
