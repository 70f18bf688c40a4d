"""The Airflow face against the operation options table (``tests/contract/cases.py``).

For every operation the table gives Airflow options of, the operator (or trigger) that runs it
is built the way a DAG builds it, with every spelling of every option: the value it hands the
operation must be the case's, and with nothing given the table's Airflow default. Then one
real run per operation against a real nats-server (and moto's S3 for the archive passes)
shows a spelled value doing what it says."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

# Airflow reads its configuration when first imported: tests.airflow.conftest points it at a
# test home first.
from tests.airflow.conftest import airflow_db, nats_default  # noqa: F401  (fixtures)

# isort: split
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.operators.archive import (
    NatsArchiveOperator,
    NatsOffloadOperator,
)
from airflow_natsobj.operators.object_store import (
    NatsCreateObjectOperator,
    NatsGetObjectOperator,
)
from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

from natsobj.errors import MissingDigest
from natsobj.operation_options import OPERATIONS, Face, for_face
from tests.archive.conftest import archive_url, moto, s3_env  # noqa: F401  (fixtures)
from tests.contract.cases import Case, cases, defaults
from tests.security.test_missing_digest_faces import CONTENT, strip_digest

FACE = Face.AIRFLOW
TARGET = "s3://archive/nats"


def _put(**given: Any) -> dict[str, Any]:
    operator = NatsCreateObjectOperator(task_id="put", bucket="b", name="n", data="x", **given)
    return operator.put_options()


def _get(**given: Any) -> dict[str, Any]:
    operator = NatsGetObjectOperator(task_id="get", bucket="b", name="n", **given)
    return {"allow_missing_digest": operator.allow_missing_digest}


def _version(**given: Any) -> dict[str, Any]:
    operator = NatsGetObjectOperator(task_id="get", bucket="b", name="n", **given)
    return {"version": operator.version()}


def _follow(**given: Any) -> dict[str, Any]:
    trigger = NatsObjectChangeTrigger(bucket="b", **given)
    # what the triggerer builds it from must carry the same values
    _, serialized = trigger.serialize()
    trigger = NatsObjectChangeTrigger(**serialized)
    return {
        "start": trigger.start_at,
        "include_deletes": trigger.include_deletes,
        "on_recreated": trigger.on_recreated,
    }


def _archive(**given: Any) -> dict[str, Any]:
    operator = NatsArchiveOperator(task_id="archive", bucket="b", target=TARGET, **given)
    return {"give_up_after": operator.give_up_after}


def _offload(**given: Any) -> dict[str, Any]:
    operator = NatsOffloadOperator(task_id="offload", bucket="b", target=TARGET, **given)
    return {
        "older_than": operator.older_than,
        "larger_than": operator.larger_than,
        "expiry_margin": operator.expiry_margin,
    }


# The Airflow object that runs each operation, built with the options given (Airflow
# spellings), and the values it hands the operation (core names).
BUILDERS: dict[str, tuple[type, Callable[..., dict[str, Any]]]] = {
    "put": (NatsCreateObjectOperator, _put),
    "get": (NatsGetObjectOperator, _get),
    "version": (NatsGetObjectOperator, _version),
    "follow": (NatsObjectChangeTrigger, _follow),
    "archive": (NatsArchiveOperator, _archive),
    "offload": (NatsOffloadOperator, _offload),
}
TAKEN = [operation for operation in OPERATIONS if for_face(FACE, operation)]


def test_every_operation_airflow_takes_options_of_has_its_operator() -> None:
    assert sorted(BUILDERS) == sorted(TAKEN)


@pytest.mark.parametrize("operation", TAKEN)
def test_every_option_is_a_parameter_defaulting_to_the_table(operation: str) -> None:
    """Airflow reads parameters from the signature: each row's Airflow spelling is one, and
    its default there is None (the table's), never a copy of the value."""
    parameters = inspect.signature(BUILDERS[operation][0]).parameters
    for option in for_face(FACE, operation).values():
        spelled = option.spelled(FACE)
        assert spelled in parameters, f"{operation}.{option.name}: no parameter {spelled}"
        assert parameters[spelled].default is None, f"{spelled} has a default of its own"


@pytest.mark.parametrize("operation", TAKEN)
def test_nothing_given_reaches_the_airflow_default(operation: str) -> None:
    assert BUILDERS[operation][1]() == defaults(FACE, operation)


@pytest.mark.parametrize(
    "case", [c for operation in TAKEN for c in cases(FACE, operation)], ids=lambda c: c.id
)
def test_every_spelling_reaches_the_operation(case: Case) -> None:
    option = case.option
    build = BUILDERS[option.operation][1]
    reached = build(**{option.spelled(FACE): case.given})
    assert reached[option.name] == case.expected
    others = {k: v for k, v in reached.items() if k != option.name}
    assert others == {k: v for k, v in defaults(FACE, option.operation).items() if k != option.name}


@pytest.mark.parametrize("operation", TAKEN)
def test_a_value_no_spelling_takes_fails_naming_the_parameter(operation: str) -> None:
    option = next(iter(for_face(FACE, operation).values()))
    with pytest.raises(ValueError, match=option.spelled(FACE)):
        BUILDERS[operation][1](**{option.spelled(FACE): "a fortnight"})


# -- one real run per operation ------------------------------------------------------------------


def test_put_runs_with_a_spelled_ttl(nats_default, store) -> None:  # noqa: F811
    NatsCreateObjectOperator(
        task_id="put", bucket=store.bucket, name="kept.txt", data="x", ttl="2d"
    ).execute(context={"outlet_events": {}})
    expires = store.get_info("kept.txt").expires
    assert expires is not None
    left = expires - datetime.now(UTC)
    assert timedelta(days=2) - timedelta(minutes=1) < left <= timedelta(days=2)


def test_get_runs_with_a_spelled_allow_missing_digest(nats_default, store, raw) -> None:  # noqa: F811
    store.put("plain", CONTENT)
    strip_digest(raw, store.bucket, "plain")
    common = {"bucket": store.bucket, "name": "plain", "encoding": "latin-1"}
    with pytest.raises(MissingDigest):
        NatsGetObjectOperator(task_id="strict", allow_missing_digest="off", **common).execute({})
    text = NatsGetObjectOperator(task_id="lenient", allow_missing_digest="on", **common).execute({})
    assert text.encode("latin-1") == CONTENT
    hook = NatsObjectStoreHook()
    assert hook.get_bytes(store.bucket, "plain", allow_missing_digest=True) == CONTENT
    with pytest.raises(MissingDigest):
        hook.get_bytes(store.bucket, "plain")


def test_follow_runs_from_a_spelled_start_with_spelled_deletes(nats_default, store) -> None:  # noqa: F811
    """``history`` (earliest) replays the changes the bucket keeps from before the trigger
    (a name's last record: the put of ``b``, the delete of ``a``), ``yes`` reports the delete;
    the default (latest, no deletes) would report neither."""
    store.put("a", b"1")
    kept = store.put("b", b"2")
    store.delete("a")

    async def two() -> list[dict[str, Any]]:
        trigger = NatsObjectChangeTrigger(
            bucket=store.bucket, start_at="history", include_deletes="yes"
        )
        events = trigger.run()
        try:
            return [(await anext(events)).payload for _ in range(2)]
        finally:
            await events.aclose()

    payloads = asyncio.run(asyncio.wait_for(two(), 30))
    assert [(p["name"], p["deleted"]) for p in payloads] == [("b", False), ("a", True)]
    assert payloads[0]["sequence"] == kept.sequence


def test_archive_and_offload_run_with_spelled_options(nats_default, store, archive_url) -> None:  # noqa: F811
    store.put("small", b"x" * 10)
    store.put("large", b"x" * 3000)
    summary = NatsArchiveOperator(
        task_id="archive", bucket=store.bucket, target=archive_url, give_up_after="5m"
    ).execute({})
    assert summary["versions"] == 2
    offloaded = NatsOffloadOperator(
        task_id="offload",
        bucket=store.bucket,
        target=archive_url,
        larger_than="1KiB",
        older_than="0s",
        expiry_margin="1h",
    ).execute({})
    assert offloaded["offloaded"] == ["large"]
