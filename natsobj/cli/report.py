"""The lines a transfer prints for what it does, as ``aws s3`` prints them: none with
``--quiet``, each marked ``(dryrun)`` with ``--dry-run``."""

from __future__ import annotations

from dataclasses import dataclass

from natsobj.cli.progress import Meter


@dataclass(frozen=True)
class Report:
    bar: Meter
    quiet: bool = False
    dry_run: bool = False

    def __call__(self, text: str) -> None:
        if not self.quiet:
            self.bar.echo(f"(dryrun) {text}" if self.dry_run else text)
