"""The ``natsobj`` command line, installed as a console script with the package."""

from __future__ import annotations

from natsobj.cli.app import cli
from natsobj.cli.exits import terminate_cleanly


def main() -> None:
    with terminate_cleanly():
        cli.main(prog_name="natsobj")


__all__ = ["cli", "main"]
