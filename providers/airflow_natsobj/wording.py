"""How Airflow says the operations and options a core error's hint names.

A hint names them by their core names (``natsobj.hints``); in Airflow an operation is an
operator and an option a parameter of one, so a failed task says which to use.
"""

from __future__ import annotations

from natsobj.hints import Operation, Option, Ref, python_words

# Core operation -> the operator that performs it.
_OPERATORS = {
    "create_store": "NatsCreateObjectStoreOperator",
    "Archiver.run": "NatsArchiveOperator",
    "offload": "NatsOffloadOperator",
}
# Core option -> where an Airflow user sets it.
_SET_ON = {
    "allow_missing_digest": "NatsGetObjectOperator",
    "on_recreated": "NatsObjectChangeTrigger",
}


def airflow_words(ref: Ref) -> str | None:
    """Airflow's words for ``ref``; None where they are the core's."""
    if isinstance(ref, Operation) and ref.name in _OPERATORS:
        return f"`{_OPERATORS[ref.name]}`"
    if isinstance(ref, Option) and ref.name in _SET_ON:
        return f"{python_words(ref)} on {_SET_ON[ref.name]}"
    return None
