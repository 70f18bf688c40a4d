"""Issue 39, finding 1, under Dagster: the multiprocess executor with the ``forkserver`` start
method (Dagster offers it and ``spawn``, not plain fork) preloads modules (the job's, or the
ones its config names) into the fork server and forks every step from there. With natsobj
among them, each step inherited the same nuid generator, so parallel steps' outputs drew the
same chunk subjects and overwrote each other. Here the job's steps run at once and every
output is accounted for."""

from __future__ import annotations

from dagster import EnvVar, In, Nothing, execute_job, job, op, reconstructable

from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource

STEPS = 4
PREFIX = "forked"


def _value(n: int) -> str:
    return f"step {n} " * 2000


def _make(n: int):
    @op(name=f"make_{n}")
    def make() -> str:
        return _value(n)

    return make


@op(ins={f"v{n}": In(str) for n in range(STEPS)} | {"after": In(Nothing)})
def check(**values: str) -> int:
    """Loads every output back through the IO manager: a lost or mixed object fails here."""
    assert values == {f"v{n}": _value(n) for n in range(STEPS)}
    return len(values)


@job(
    resource_defs={
        "io_manager": NatsObjectStoreIOManager(
            resource=NatsObjectStoreResource(url=EnvVar("NATSOBJ_FORK_TEST_URL")),
            bucket=EnvVar("NATSOBJ_FORK_TEST_BUCKET"),
            prefix=PREFIX,
        )
    }
)
def forked_steps():
    check(**{f"v{n}": _make(n)() for n in range(STEPS)})


def test_parallel_steps_forked_from_the_fork_server_keep_every_output(
    instance, nats_url, io_manager, bucket_store, bucket_name, monkeypatch
):
    monkeypatch.setenv("NATSOBJ_FORK_TEST_URL", nats_url)
    monkeypatch.setenv("NATSOBJ_FORK_TEST_BUCKET", bucket_name)
    start = {"forkserver": {"preload_modules": ["dagster_natsobj"]}}
    run_config = {
        "execution": {"config": {"multiprocess": {"start_method": start, "max_concurrent": STEPS}}}
    }
    with execute_job(
        reconstructable(forked_steps), instance=instance, run_config=run_config
    ) as result:
        assert result.success
        assert result.output_for_node("check") == STEPS
        run_id = result.run_id
    names = {info.name for info in bucket_store.list(prefix=f"{PREFIX}/storage/{run_id}/")}
    made = {f"{PREFIX}/storage/{run_id}/make_{n}/result" for n in range(STEPS)}
    assert made <= names, names
    infos = [bucket_store.get_info(name) for name in made]
    assert len({info.nuid for info in infos}) == STEPS
