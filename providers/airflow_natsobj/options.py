"""Operator, hook and trigger parameters read through the one table of operation options.

Every option an Airflow task or trigger takes (a put's ``ttl``, a read's
``allow_missing_digest``, a change feed's ``start_at``, an archive pass's ``give_up_after``...)
is a row of ``natsobj.operation_options``: its name here is the row's Airflow spelling, its
default the row's Airflow default, and its value is read by the row's parser, so ``"2d"``,
``"on"`` or ``"new"`` mean on a task what they mean on every other face.
"""

from __future__ import annotations

from typing import Any

from natsobj.operation_options import Face, for_face, resolve

FACE = Face.AIRFLOW


def unset(value: Any) -> Any:
    """None for a templated field that rendered nothing: Jinja renders a None as the text
    "None" (and an undefined value as ""), which means the field was not given."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    return value


def rendered_sequence(value: Any, what: str) -> int | None:
    """A templated meta-stream sequence (``"{{ ti.xcom_pull('put')['sequence'] }}"``): None
    when it rendered nothing, else the whole number; ``what`` names the parameter."""
    value = unset(value)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a stream sequence number, got {value!r}") from None


def operation_options(operation: str, where: str, **given: Any) -> dict[str, Any]:
    """Every option of ``operation`` as an Airflow task runs it, by core name: the value
    given under its Airflow spelling (parsed; unset when it rendered nothing) or the Airflow
    default. ``where`` (a task or trigger) leads any error, which names the parameter."""
    rows = {row.spelled(FACE): row.name for row in for_face(FACE, operation).values()}
    unknown = set(given) - set(rows)
    if unknown:
        raise TypeError(f"{where}: {operation} takes no option {', '.join(sorted(unknown))}")
    return resolve(
        FACE, operation, {rows[key]: unset(value) for key, value in given.items()}, where=where
    )
