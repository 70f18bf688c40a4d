"""How a Spark job says the operations and options a core error's hint names.

A hint names them by their core names (``natsobj.hints``); a Spark job sets options of
``format("natsobj")``, so an error a read or write surfaces says the ``.option`` call.
"""

from __future__ import annotations

from natsobj.hints import Operation, Option, Ref
from natsobj.spark.options import KNOWN_OPTIONS


def spark_words(ref: Ref) -> str | None:
    """How a Spark job says what a core error's hint names: an option of
    ``format("natsobj")`` as the ``.option`` call that sets it (None for one Spark has not)."""
    if isinstance(ref, Operation) and ref.name == "create_store":
        return f"{spark_words(Option('create_bucket', True))} on a write"
    if isinstance(ref, Option) and ref.name in KNOWN_OPTIONS:
        value = "" if ref.value is None else ref.value
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        return f'.option("{ref.name}", "{shown}")' if shown else f"option {ref.name}"
    return None
