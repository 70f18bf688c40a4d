"""The CLI's spellings of the connection settings: each ``ConnectionSettings`` field's flags
and metavar, where they differ from the generated ``--field-name`` and none.

The table of fields (``natsobj.settings.SETTINGS``) says what each setting is; how one face
spells it belongs to that face, as the Airflow extras and the Spark option aliases do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CliSpelling:
    """The flags a field is given with (the first one is its name in help and errors) and
    the metavar that stands for its value."""

    flags: tuple[str, ...] = ()
    metavar: str | None = None


SPELLINGS: dict[str, CliSpelling] = {
    "servers": CliSpelling(("--url", "-s"), "URL"),
    "nkey_seed": CliSpelling(("--nkey",), "SEED|FILE"),
    "creds_file": CliSpelling(("--creds",), "FILE"),
    "connect_timeout": CliSpelling(("--timeout",), "SECONDS"),
    "api_timeout": CliSpelling(metavar="SECONDS"),
    "failover_timeout": CliSpelling(metavar="SECONDS"),
    "cache_dir": CliSpelling(metavar="DIR"),
}


def spelling(name: str) -> CliSpelling:
    """Field ``name``'s flags and metavar: from ``SPELLINGS``, else ``--field-name``."""
    given = SPELLINGS.get(name, CliSpelling())
    return CliSpelling(given.flags or ("--" + name.replace("_", "-"),), given.metavar)
