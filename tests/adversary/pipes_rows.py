"""The adversary's Pipes rows (issue 39, findings 9 and 10): a Pipes session's context and
message chunks are objects a writer of the shared bucket can replace, move or forge, so each
is sealed with the session's secret (``natsobj.pipes.seal``), which never enters the bucket.

Two honest sessions seal numbered chunks into A, each chunk written once under a name that
gives its number (``pipes/<session>/<n>.json``, as ``natsobj.pipes.chunk_name``); the reading
side unseals whatever A then holds under such a name, expecting the name's number. Held to:
unsealing answers exactly the text sealed under that name, or ``PipesObjectForged`` (never
another error, never another chunk's or another session's text); and a chunk the adversary
did not touch unseals to what was sealed."""

from __future__ import annotations

import itertools
import re

from hypothesis import strategies as st

from natsobj.pipes import PipesObjectForged, seal, unseal
from tests.adversary.world import Violation, World

SECRET = "the sessions' secret, which no writer of the bucket knows"
SESSIONS = ("a", "b")
_NAME = re.compile(r"pipes/([ab])/(\d+)\.json")
_numbers = {session: itertools.count(1) for session in SESSIONS}


def chunk_name(session: str, number: int) -> str:
    return f"pipes/{session}/{number}.json"


def number_of(name: str) -> int | None:
    """The place in its session's sequence that a chunk's name gives, as the reader expects."""
    match = _NAME.fullmatch(name)
    return int(match.group(2)) if match else None


def pipes_names(world: World) -> list[str]:
    """The chunk names a row or an attack may aim at: each sealed one, and the next of each
    session (where a forgery may come before the honest chunk)."""
    upcoming = [chunk_name(s, max(_sealed_numbers(world, s), default=0) + 1) for s in SESSIONS]
    return sorted({*world.pipes, *upcoming})


def _sealed_numbers(world: World, session: str) -> list[int]:
    return [number_of(name) or 0 for name in world.pipes if name.startswith(f"pipes/{session}/")]


def pipes_put(world: World, data: st.DataObject) -> None:
    """An honest session seals its next message chunk into A."""
    session = data.draw(st.sampled_from(SESSIONS), label="session")
    number = next(_numbers[session])
    name = chunk_name(session, number)
    lines = data.draw(st.integers(1, 300), label="lines")
    text = f'{{"method": "report_asset_materialization", "rows": {number}}}\n' * lines
    sealed = seal(SECRET, name, number, text)
    ok, info = world.call(f"put sealed {name!r}", lambda: world.a.put(name, sealed))
    if not ok:
        if not world.rules_attacked:
            raise Violation(f"a sealed put of {name!r} failed: {info!r}")
        return
    world.remember_put(name, sealed, info)
    world.pipes[name] = text


def pipes_read(world: World, data: st.DataObject) -> None:
    """The reading side unseals a chunk of A, expecting the number its name gives."""
    names = pipes_names(world)
    name = data.draw(st.sampled_from(names), label="chunk")
    expected = number_of(name)
    assert expected is not None
    ok, got = world.call(f"get_bytes({name!r})", lambda: world.a.get_bytes(name))
    if not ok:
        return  # the read's own row holds what a failed read may be
    sealed = world.pipes.get(name)
    try:
        text = unseal(SECRET, world.bucket, name, expected, got)
    except PipesObjectForged:
        if sealed is not None and name in world.intact():
            raise Violation(f"the sealed chunk {name!r}, untouched, was taken as forged") from None
        return
    except Exception as exc:  # any other error is the defect looked for
        raise Violation(f"unsealing {name!r} raised {exc!r}, not PipesObjectForged") from exc
    if text != sealed:
        raise Violation(f"unsealing {name!r} gave text not sealed under it: {text[:80]!r}")
