"""Text to values, the one way every face reads them: a Spark option, an Airflow extra, an
environment variable and a ``ConnectionSettings`` field given as text all say "on" alike."""

from __future__ import annotations

import math
import re
from datetime import timedelta

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


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")


def parse_duration(value: object, *, what: str = "duration") -> timedelta:
    """``7d``, ``12h``, ``90m``, ``45s``, ``2w``, a compound (``1h30m``, Go's ``15m0s`` as
    the server writes it in a ``Nats-TTL`` header) or a bare number of seconds: one reading
    for the CLI's options, lifecycle rules and the server's headers alike."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    text = str(value).strip().lower().replace(" ", "")
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return timedelta(seconds=seconds)
    parts = _DURATION_PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"{what} must be a duration like 7d, 12h, 90m or 1h30m, not {value!r}")
    return timedelta(seconds=sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts))


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(value: object, *, what: str = "size") -> int:
    """``100MB``, ``1.5GiB``, ``4096``: decimal (kB, MB, GB, TB) or binary (KiB, MiB...)
    units, as the sizes ``natsobj ls`` prints, or a whole number of bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    text = str(value).strip().lower().replace(" ", "").replace("_", "")
    number = text.rstrip("kmgtib")
    try:
        size = float(number) * _SIZE_UNITS[text[len(number) :]]
    except (KeyError, ValueError):
        size = -1
    if not math.isfinite(size) or size < 0:
        raise ValueError(f"{what} must be a size like 100MB, 1.5GiB or 4096, not {value!r}")
    return int(size)


def parse_count(value: object, *, what: str = "count", minimum: int = 1) -> int:
    """A whole number of at least ``minimum`` (``5000``, ``1_000``): row counts, batch limits,
    generations kept. A bool, a fraction or a sign is refused rather than rounded."""
    text = str(value).strip().replace("_", "")
    if isinstance(value, bool) or not text.isdigit() or int(text) < minimum:
        raise ValueError(f"{what} must be a whole number >= {minimum}, not {value!r}")
    return int(text)


NEVER = "never"


def parse_ttl(value: object, *, what: str = "ttl") -> timedelta:
    """A put's TTL as every face takes it: a duration (``parse_duration``), or ``never``,
    which is ``timedelta(0)``: no expiry, whatever the bucket's lifecycle rules say."""
    if isinstance(value, str) and value.strip().lower() == NEVER:
        return timedelta(0)
    return parse_duration(value, what=what)


NULL_VERSION = "null"
_VERSION_ID = re.compile(r"[0-9A-Za-z]{22}")


def parse_version_id(value: object, *, what: str = "version id") -> str | None:
    """A version id as every face takes it: an object version's id (its nuid, 22 letters and
    digits, as a versions listing shows it), or ``null``, S3's id of the current version of an
    unversioned object, which is None: the current version. Anything else is refused before a
    request is made, so no text reaches a subject (a ``*`` or ``.`` would widen it)."""
    text = str(value).strip()
    if text == NULL_VERSION:
        return None
    if not _VERSION_ID.fullmatch(text):
        raise ValueError(
            f"{what} must be a version id (22 letters and digits, as a versions listing shows"
            f" it) or null, not {value!r}"
        )
    return text


def format_duration(value: timedelta) -> str:
    """The shortest ``parse_duration`` text for whole seconds: ``7d``, ``1h30m``, ``45s``."""
    seconds = round(value.total_seconds())
    out = []
    for unit in ("d", "h", "m", "s"):
        size = _DURATION_UNITS[unit]
        count, seconds = divmod(seconds, int(size))
        if count:
            out.append(f"{count}{unit}")
    return "".join(out) or "0s"
