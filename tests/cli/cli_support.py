"""Helpers shared by the CLI tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from click.testing import Result

NATSOBJ_BIN = Path(sys.executable).parent / "natsobj"
Invoke = Callable[..., Result]


def cli_env(**extra: str) -> dict[str, str]:
    """The test process's environment without NATS_* settings that could leak in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update(extra)
    return env


def lines(text: str) -> Sequence[str]:
    return [line for line in text.splitlines() if line.strip()]
