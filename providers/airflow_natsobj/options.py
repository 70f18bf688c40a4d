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
VERSION_ROW = for_face(FACE, "version")["version"]


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


def version_option(
    value: Any, where: str, parameter: str = VERSION_ROW.spelled(FACE)
) -> str | None:
    """The version a task names (None: the current one), read by the version row's parser.
    ``parameter`` is the row's Airflow spelling, ``version_id``, or the name a task takes it
    under (a copy names its source's ``source_version_id``, as the Amazon provider's
    ``S3CopyObjectOperator`` does), which an error then names."""
    try:
        return VERSION_ROW.parse(unset(value))
    except ValueError as exc:
        raise ValueError(f"{where}: {parameter}: {exc}") from None
