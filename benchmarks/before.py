"""natsobj as it was at an earlier commit, measured beside today's in the same run.

"Nothing gets slower" can only be shown by measuring both versions on the same machine under
the same load: figures from an earlier run differ by more than the noise of this shared
machine. ``make bench BENCH_ARGS="--before REF"`` extracts the ``natsobj`` package of ``REF``
into a temporary directory and runs natsobj's own cases a second time from there (the
``before`` column), interleaved with today's in every repeat.

The case processes run with that directory as their working directory, which ``python -m``
puts first on ``sys.path``: ``import natsobj`` loads the old package, while ``benchmarks``
(linked there) is today's, so both versions run the very same benchmark code.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Checkout:
    """The ``natsobj`` package of ``ref``, and the working directory that runs it."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.commit = _git("rev-parse", "--short", ref).strip()
        self.directory = Path(tempfile.mkdtemp(prefix="natsobj-before-"))
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", self.commit, "natsobj"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(self.directory, filter="data")
        (self.directory / "benchmarks").symlink_to(ROOT / "benchmarks")

    @property
    def label(self) -> str:
        return f"natsobj at {self.commit}"

    def remove(self) -> None:
        subprocess.run(["rm", "-rf", str(self.directory)], check=False)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout
