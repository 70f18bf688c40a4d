"""The ``natsobj`` command line, installed as a console script with the package."""

from __future__ import annotations

from natsobj.cli.app import cli


def main() -> None:
    cli.main(prog_name="natsobj")


__all__ = ["cli", "main"]
