"""The README's five-minute tours, read from the README and run as written.

A tour is the fenced blocks marked ``<!-- tour: NAME [file=PATH] [background port=N] -->`` on
the line before them, in README order. They become one bash script, run in an empty
directory as a new user's shell would run them, one after the other:

- a ``bash`` block runs as it is (``set -e``: every command must succeed);
- a ``python`` block runs with ``python``, or, with ``file=PATH``, is saved as ``PATH`` for a
  later block to use ("save this as ``defs.py``");
- a ``background`` block is the one that runs until Ctrl-C in a terminal of its own
  (``natsobj serve --gateway``): it is started in the background, the script waits for its
  ``port``, and it gets the SIGINT of that Ctrl-C when the tour ends.

The environment is a fresh shell's: the virtualenv's ``bin`` first on ``PATH``, this tree on
``PYTHONPATH`` (the installed package), and none of the NATS, natsobj, Airflow, Dagster or AWS
variables the suite sets for itself, so a tour that needs one must set it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from natsobj.local.embedded import stop_server

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = re.compile(r"<!-- tour: ([\w-]+)((?: [\w-]+(?:=\S+)?)*) -->\n```(\w+)\n(.*?)\n```", re.S)
# what a fresh shell does not have: the suite's own settings for its servers and homes
CLEARED = re.compile(r"^(NATS_|NATSOBJ_DATA_DIR$|AIRFLOW|DAGSTER_|AWS_|PYSPARK_)")


@dataclass(frozen=True)
class Block:
    tour: str
    language: str
    code: str
    options: dict[str, str]


def blocks() -> list[Block]:
    """Every marked block of the README, in order."""
    found = []
    for match in MARKER.finditer(README.read_text()):
        tour, attrs, language, code = match.groups()
        options = dict(a.partition("=")[::2] for a in attrs.split())
        found.append(Block(tour, language, code, options))
    return found


def tours() -> list[str]:
    return list(dict.fromkeys(block.tour for block in blocks()))


def script(tour: str) -> str:
    """The tour's blocks as one bash script."""
    lines = ["set -euo pipefail", "set -m  # a background block gets Ctrl-C as in a terminal"]
    marked = [block for block in blocks() if block.tour == tour]
    assert marked, f"the README has no tour {tour!r}"
    for number, block in enumerate(marked):
        end = f"END_OF_BLOCK_{number}"
        if "file" in block.options:
            path = shlex.quote(block.options["file"])
            lines += [f"cat > {path} <<'{end}'", block.code, end]
        elif block.language == "python":
            lines += [f"python - <<'{end}'", block.code, end]
        elif "background" in block.options:
            port = int(block.options["port"])
            lines += [
                f"cat > .tour_background_{number}.sh <<'{end}'", block.code, end,
                f"bash .tour_background_{number}.sh &",
                "trap 'kill -INT -- -'$!' 2>/dev/null; wait' EXIT",
                f"python -m tests.readme_tours wait-port {port}",
            ]  # fmt: skip
        else:
            assert block.language == "bash", block
            lines.append(block.code)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Ran:
    """A tour's run: bash's result, and the embedded servers it left running (stopped since)."""

    returncode: int
    stdout: str
    stderr: str
    left_running: list[Path]


def run(tour: str, where: Path, timeout: float) -> Ran:
    """Run the tour in ``where`` (empty), then stop every embedded server it left running."""
    env = {k: v for k, v in os.environ.items() if not CLEARED.match(k)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    (where / ".tour.sh").write_text(script(tour))
    try:
        done = subprocess.run(
            ["bash", ".tour.sh"], cwd=where, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    finally:
        left = [data_dir for data_dir in where.rglob(".natsobj") if stop_server(data_dir)]
    return Ran(done.returncode, done.stdout, done.stderr, left)


def wait_port(port: int, timeout: float = 120.0) -> None:
    """Until something accepts connections on the loopback ``port`` (the background block
    is up), or exit 1 after ``timeout`` seconds."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    sys.exit(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


if __name__ == "__main__":
    assert sys.argv[1] == "wait-port", sys.argv
    wait_port(int(sys.argv[2]))
