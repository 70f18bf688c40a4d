"""One retry policy (issue 29): one backoff rule with its figures in ``natsobj.retry``, and one
retryable-error type, a ``NatsObjError``. Before, seven sites each computed a backoff of their
own and a JetStream call that a cluster may answer later raised ``TransientError``, a bare
``Exception`` that no ``except NatsObjError`` caught."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from natsobj import aio
from natsobj.errors import NatsObjError, NotConnected

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    path
    for top in ("natsobj", "providers/airflow_natsobj", "dagster_natsobj")
    for path in sorted((ROOT / top).rglob("*.py"))
    if path != ROOT / "natsobj" / "retry.py"
]


def _backoffs(tree: ast.AST) -> list[int]:
    """Lines computing an exponential backoff: ``2 ** n`` with a variable ``n``, or
    ``min(x * 2, cap)``."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Pow)
            and isinstance(node.left, ast.Constant)
            and node.left.value == 2
            and not isinstance(node.right, ast.Constant)
        ):
            lines.append(node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "min"
            and any(
                isinstance(arg, ast.BinOp)
                and isinstance(arg.op, ast.Mult)
                and isinstance(arg.right, ast.Constant)
                and arg.right.value == 2
                for arg in node.args
            )
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.unit
def test_no_backoff_is_computed_outside_the_retry_module() -> None:
    found = {
        str(path.relative_to(ROOT)): lines
        for path in SOURCES
        if (lines := _backoffs(ast.parse(path.read_text(), str(path))))
    }
    assert found == {}, "use a row of natsobj.retry instead"


@pytest.mark.unit
def test_every_row_is_capped_exponential_and_jitter_only_shortens_a_pause() -> None:
    from natsobj import retry

    rows = {n: v for n, v in vars(retry).items() if isinstance(v, retry.RetryPolicy)}
    assert {"FAILOVER", "RESEND", "REPLICA_CATCH_UP", "CONFLICT", "RACED", "RESUME"} <= set(rows)
    for name, policy in rows.items():
        for attempt in range(1, 40):
            step = min(policy.first * 2 ** (attempt - 1), policy.cap)
            for _ in range(20):
                delay = policy.delay(attempt)
                assert (1 - retry.JITTER) * step <= delay <= step, (name, attempt, delay)
        tries = list(zip(policy.tries(), range(1000), strict=False))
        assert len(tries) == (policy.attempts or 1000), name


@pytest.mark.unit
def test_a_pause_never_runs_past_the_deadline() -> None:
    from natsobj.retry import RESUME

    async def pause() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await RESUME.pause(30, deadline=started + 0.05)  # a 30 s step, 50 ms left
        return loop.time() - started

    assert asyncio.run(pause()) < 1.0


def test_an_unanswered_call_is_the_one_retryable_error_and_ends_as_not_connected(
    nats_url: str,
) -> None:
    """No responder for the API prefix: ``call_once`` raises the retryable error (a
    NatsObjError, whose ``final`` is the NotConnected to act on); ``call`` on a single server
    retries nothing and raises that NotConnected."""

    async def calls() -> tuple[NatsObjError, NatsObjError]:
        client = await aio.connect(nats_url, api_prefix="nobody.answers", api_timeout=1.0)
        try:
            with pytest.raises(NatsObjError) as once:
                await client.api.call_once("INFO")
            with pytest.raises(NotConnected) as final:
                await client.api.call("INFO")
            return once.value, final.value
        finally:
            await client.close()

    once, final = asyncio.run(calls())
    from natsobj.retry import RetryableError

    assert isinstance(once, RetryableError)
    assert isinstance(once.final, NotConnected)
    assert not isinstance(final, RetryableError)
    assert "no responders" in str(final)
