"""Text to values, the one way every face reads them: a Spark option, an Airflow extra, an
environment variable and a ``ConnectionSettings`` field given as text all say "on" alike."""

from __future__ import annotations

TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def parse_bool(value: object, *, what: str = "value") -> bool:
    """``True``/``False`` as they are; text by the one vocabulary (case and spaces ignored).

    Anything else is refused rather than guessed: ``"of"`` or ``"ture"`` silently read as
    true (or false) would switch a setting the caller meant to switch the other way."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(
        f"{what} must be true or false ({'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}), "
        f"not {value!r}"
    )
