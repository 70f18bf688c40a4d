"""A model-based adversary against every path of natsobj (issue 28, "Make it stay fixed").

Hypothesis drives a state machine on one real nats-server, with two fresh buckets per
example: B, the victim, which the adversary can neither write nor read, and A, which it
attacks. Its rules interleave
- honest writes through natsobj (``put``, fsspec ``pipe_file``, copies, restamps): the model
  keeps each such object's true bytes;
- a writer's raw writes on ``$O.<A>.>`` (``attacks.WRITER_ATTACKS``): records with any field
  values and headers, chunks of any size, rollups, TTL headers;
- a stream admin's writes (``attacks.ADMIN_ATTACKS``): lifecycle rules in the stream
  metadata, subject purges;
- every read and write path (``operations.OPERATIONS``), each with its own checks: the
  S3 gateway's among them, through boto3 against a gateway on the same server.

After every step the invariants hold: B's objects are intact byte for byte; every honest
object of A no adversarial write touched reads back exactly. Every call returns within its
bound, peaks under a memory bound and raises only natsobj's typed errors (``world.World``).
docs/security.md ("The adversary in the suite") lists the invariants and the paths.

**A new read or write path must be added to ``operations.OPERATIONS``** (and a new kind of
hostile input to ``attacks``): each feature so far reopened this class of defect.

``make test`` runs a short, derandomized profile; ``make test-slow`` a long random one.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import natsobj.aio
from natsobj.gateway.multipart import uploads_store
from natsobj.sync import run
from tests.adversary.attacks import ADMIN_ATTACKS, B_NAMES, WRITER_ATTACKS, Attack
from tests.adversary.operations import OPERATIONS, Operation
from tests.adversary.wire import AdversaryWire
from tests.adversary.world import Violation, World, random_bytes, secret_bytes
from tests.gateway.conftest import GatewayThread, make_s3, write_credentials

SHORT = settings(
    max_examples=20,
    stateful_step_count=40,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
LONG = settings(
    max_examples=150,
    stateful_step_count=60,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


class Adversary(RuleBasedStateMachine):
    url: str = ""
    s3: Any = None  # boto3, on a gateway in front of ``url``

    def __init__(self) -> None:
        super().__init__()
        client = run(natsobj.aio.connect(self.url))
        suffix = uuid.uuid4().hex[:10]
        a = run(client.create_store(f"adv-a-{suffix}"))
        b = run(client.create_store(f"adv-b-{suffix}"))
        b_objects = {
            name: secret_bytes(size) for name, size in zip(B_NAMES, (3000, 70_000), strict=True)
        }
        for name, data in b_objects.items():
            run(b.put(name, data, chunk_size=4096))
        self.world = World(self.url, AdversaryWire(self.url), client, a, b, b_objects, s3=self.s3)
        for name, seed in (("h/0", 1), ("h/1", 2)):
            payload = random_bytes(20_000 * seed, seed)
            self.world.remember_put(name, payload, run(a.put(name, payload, chunk_size=4096)))
        self.world.watcher = a.watch(start="latest")
        run(self.world.watcher.start())
        self.world.watch_cursor = self.world.wire.last_seq(a.bucket)

    def teardown(self) -> None:
        world = self.world
        with contextlib.suppress(Exception):
            run(world.watcher.stop())
        for bucket in (world.a.bucket, world.b.bucket, uploads_store(world.a.bucket)):
            with contextlib.suppress(Exception):
                run(world.client.delete_store(bucket))
        with contextlib.suppress(Exception):
            run(world.client.close())
        world.wire.close()

    @invariant()
    def victim_bucket_intact(self) -> None:
        """B: the same objects, byte for byte, whatever was done to A."""
        world = self.world
        ok, infos = world.call("B list()", lambda: world.b.list())
        assert ok, infos
        if sorted(info.name for info in infos) != sorted(world.b_objects):
            raise Violation(f"bucket B now lists {[info.name for info in infos]}")
        for name, data in world.b_objects.items():
            ok, got = world.call(
                f"B get_bytes({name!r})", functools.partial(world.b.get_bytes, name)
            )
            if not ok or got != data:
                raise Violation(f"bucket B's {name!r} is no longer intact: {got!r:.200}")

    @invariant()
    def untouched_objects_intact(self) -> None:
        """Every honest object of A the adversary did not touch reads back exactly."""
        world = self.world
        for name in world.intact():
            ok, got = world.call(f"get_bytes({name!r})", functools.partial(world.a.get_bytes, name))
            if not ok or got != world.honest[name].data:
                raise Violation(
                    f"{name!r}, which nothing touched, no longer reads back: {got!r:.200}"
                )


def _as_rule(step: Operation | Attack) -> Callable[[Adversary, st.DataObject], None]:
    """One rule per row of the tables: hypothesis prints each step by its path's name, and
    its swarm testing (leaving some rules out of an example) varies the mix."""

    def run_step(self: Adversary, data: st.DataObject) -> None:
        step.run(self.world, data)

    run_step.__name__ = run_step.__qualname__ = step.name
    run_step.__doc__ = step.run.__doc__
    return rule(data=st.data())(run_step)


_steps: list[Operation | Attack] = [*OPERATIONS, *WRITER_ATTACKS, *ADMIN_ATTACKS]
for _step in _steps:
    setattr(Adversary, _step.name, _as_rule(_step))


def _run(nats_url: str, profile: settings, folder: Path) -> None:
    gateway = GatewayThread(nats_url, write_credentials(folder))
    try:
        Adversary.url, Adversary.s3 = nats_url, make_s3(gateway.endpoint)
        run_state_machine_as_test(Adversary, settings=profile)
    finally:
        gateway.stop()


@pytest.mark.timeout(1200)  # room for hypothesis to shrink and report a failure
def test_adversary_short(nats_url: str, tmp_path: Path) -> None:
    _run(nats_url, SHORT, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_adversary_long(nats_url: str, tmp_path: Path) -> None:
    _run(nats_url, LONG, tmp_path)
