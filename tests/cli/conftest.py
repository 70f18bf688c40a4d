"""Ways to run the CLI in tests: in-process with CliRunner, or as the installed console script."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import NATSOBJ_BIN, Invoke, cli_env
from click.testing import CliRunner, Result

from natsobj.cli import cli


@pytest.fixture
def invoke(nats_url: str) -> Invoke:
    """Run ``natsobj --url <test server> ARGS`` in-process; stderr is kept apart from stdout."""

    def run(*args: str, input: bytes | str | None = None, url: str | None = nats_url) -> Result:
        prefix = ["--url", url] if url else []
        return CliRunner().invoke(cli, [*prefix, *args], input=input, catch_exceptions=False)

    return run


@pytest.fixture
def natsobj_bin() -> Path:
    """The console script pip installed; its absence is a failure, not a skip."""
    assert NATSOBJ_BIN.exists(), f"console script missing at {NATSOBJ_BIN}: pip install -e ."
    return NATSOBJ_BIN


@pytest.fixture
def run_bin(natsobj_bin: Path, nats_url: str) -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """Run the real ``natsobj`` executable against the test server, capturing bytes."""

    def run(
        *args: str, stdin: bytes | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(natsobj_bin), "--url", nats_url, *args],
            input=stdin,
            capture_output=True,
            timeout=timeout,
            env=cli_env(),
            check=False,
        )

    return run
