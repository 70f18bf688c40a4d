"""``natsobj gateway`` as a process of its own, as an operator runs it: its endpoint from the
line it prints, its log in a file, stopped by SIGTERM."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ANNOUNCED = "S3 gateway on "


def _confined(nofile: int | None, one_core: bool) -> Callable[[], None] | None:
    """What the child sets before it runs: a file-descriptor limit, one core (the default
    worker count follows the cores a process may use)."""
    if nofile is None and not one_core:
        return None

    def apply() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if one_core:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    return apply


class GatewayProcess:
    """``natsobj --url NATS gateway --listen 127.0.0.1:0 ARGS`` with stderr in ``log``
    (``wrapper``: a command that runs it, e.g. in a mount namespace of its own)."""

    def __init__(
        self,
        nats_url: str,
        log: Path,
        *args: str,
        nofile: int | None = None,
        one_core: bool = False,
        env: dict[str, str] | None = None,
        wrapper: tuple[str, ...] = (),
    ) -> None:
        self.log = log
        command = [*wrapper, sys.executable, "-m", "natsobj.cli", "--url", nats_url, "gateway"]
        if "--listen" not in args:
            command += ["--listen", "127.0.0.1:0"]
        with log.open("wb") as stderr:
            self.process = subprocess.Popen(
                [*command, *args],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})},
                preexec_fn=_confined(nofile, one_core),
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith(ANNOUNCED), f"{line!r}; log: {self.log_text()[-3000:]}"
        self.endpoint = line[len(ANNOUNCED) :].strip()

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM, then the exit status (SIGKILL past ``timeout``, and the test fails)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the gateway did not stop within {timeout}s of SIGTERM") from None

    def __enter__(self) -> GatewayProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
