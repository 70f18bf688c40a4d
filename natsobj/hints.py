"""Hints that name operations and options by reference, so each face says them in its own words.

An error ends with what the user can do, and that often means running an operation or setting
an option. The core names them by their core names (``create_store``, ``allow_missing_digest``)
and says them in the Python API's words; a face (the CLI, Spark, Airflow, Dagster) rewords the
errors it surfaces with its own spelling (``natsobj store create BUCKET``,
``.option("allow_missing_digest", "true")``), so renaming a face's option never touches the
core. Faces reword with ``natsobj.errors.in_words_of``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    """An option by its core name (the Python API's keyword), with the value a hint suggests;
    ``value`` None when the hint names the option alone ("raise failover_timeout")."""

    name: str
    value: object = None


@dataclass(frozen=True)
class Operation:
    """An operation by its core name (the Python API's function or method), with what a hint
    would pass it: ``subject``, its arguments by their core names (``bucket``), and
    ``options``, the keywords it suggests."""

    name: str
    subject: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()


Ref = Operation | Option
# A face's words for what a hint names; None where the face has none (the core's are used).
Spelling = Callable[[Ref], str | None]


# Operations no Python call performs, said as the command that does on every face: the
# embedded server runs as a process of its own, which only the console script starts.
_COMMAND_ONLY = {"serve": "`natsobj serve`"}


def python_words(ref: Ref) -> str:
    """The core's words for ``ref``: how a Python caller writes it."""
    if isinstance(ref, Option):
        return ref.name if ref.value is None else f"{ref.name}={ref.value!r}"
    if ref.name in _COMMAND_ONLY:
        return _COMMAND_ONLY[ref.name]
    arguments = [*ref.subject, *(python_words(option) for option in ref.options)]
    return f"{ref.name}({', '.join(arguments)})"


class Hint(str):
    """A hint whose text is the core's wording, and which can be said in a face's.

    ``template`` is the sentence with a ``{}`` where each of ``refs`` goes. A ``Hint`` is a
    ``str`` (the core's wording), so it stands wherever a plain hint does."""

    template: str
    refs: tuple[Ref, ...]

    def __new__(cls, template: str, *refs: Ref) -> Hint:
        hint = super().__new__(cls, template.format(*map(python_words, refs)))
        hint.template = template
        hint.refs = refs
        return hint

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it was built from (Spark and multiprocessing ship errors)."""
        return Hint, (self.template, *self.refs)

    def spelled(self, spelling: Spelling) -> str:
        """The hint in a face's words; the core's for whatever the face has none for."""
        return self.template.format(*(spelling(ref) or python_words(ref) for ref in self.refs))


def spell(hint: str, spelling: Spelling) -> str:
    """``hint`` in a face's words: a plain string names nothing, and stays as it is."""
    return hint.spelled(spelling) if isinstance(hint, Hint) else hint
