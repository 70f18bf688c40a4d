"""Helpers shared by the CLI tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import nats
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


def publish_raw(url: str, subject: str, data: bytes, headers: dict[str, str] | None = None) -> None:
    """Write a message straight into JetStream, the way a broken or foreign client might."""

    async def publish() -> None:
        nc = await nats.connect(url)
        try:
            await nc.jetstream().publish(subject, data, headers=headers)
        finally:
            await nc.close()

    asyncio.run(publish())
