"""Which scan a pruned read plan serves, kept in a NATS key-value bucket of the dataset's
connection.

Spark 4.1-4.3 keep one read plan per loaded DataFrame, replaced by each scan that pushes a
filter and reused, with no Python call, by every scan that does not (docs/spark.md, "Filter
pushdown"). So a plan that skips parts must find out, when it runs, whether it runs for the
scan that pushed it. Two records here decide that, and every doubt reads everything, which is
always right since Spark applies every filter to the rows read:

- ``load.<id>``, created by the first push for one ``load()``: a later push for the same load
  (a union or self-join pushes once per scan during one optimization, and the last plan serves
  both) finds it and plans a full read;
- ``plan.<id>``, created empty when a push plans a pruned read, then set, compare-and-set, to
  the first Spark stage that runs the plan: tasks of that stage read the pruned plan, tasks of
  any other stage (a later ``count()`` of the same DataFrame) read everything.

The records live for ``CLAIM_AGE``; a plan record gone by then (or never written, or not
readable) reads everything.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import nats.errors
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue

import natsobj
from natsobj.sync import run

CLAIMS_BUCKET = "natsobj_spark_scans"
CLAIM_AGE = timedelta(days=7)
_FAILURES = (nats.errors.Error, TimeoutError, OSError)


def _bucket(store: natsobj.ObjectStore) -> KeyValue:
    client = store.aio.client

    async def open_or_create() -> KeyValue:
        js = client.nc.jetstream(prefix=client.api.prefix)
        try:
            return await js.key_value(CLAIMS_BUCKET)
        except NotFoundError:
            return await js.create_key_value(
                KeyValueConfig(
                    bucket=CLAIMS_BUCKET,
                    history=1,
                    ttl=CLAIM_AGE.total_seconds(),
                    description="natsobj Spark: which scan a pruned read plan serves",
                )
            )

    return run(open_or_create())


def first_push(store: natsobj.ObjectStore, load_id: str) -> bool:
    """True for the first push of filters for the load ``load_id``; False for any later one,
    and when the record cannot be written."""
    try:
        run(_bucket(store).create(f"load.{load_id}", b""))
    except (KeyWrongLastSequenceError, *_FAILURES):
        return False
    return True


def new_plan(store: natsobj.ObjectStore) -> str | None:
    """The id of a pruned plan, recorded unclaimed; None when it cannot be recorded."""
    plan = uuid.uuid4().hex
    try:
        run(_bucket(store).create(f"plan.{plan}", b""))
    except _FAILURES:
        return None
    return plan


def serves_stage(store: natsobj.ObjectStore, plan: str, stage: int) -> bool:
    """True when ``stage`` is the first stage that ran ``plan`` (claimed now or before)."""
    key, mine = f"plan.{plan}", str(stage).encode()
    try:
        kv = _bucket(store)
        entry = run(kv.get(key))
        if not entry.value:
            try:
                run(kv.update(key, mine, last=entry.revision))
                return True
            except KeyWrongLastSequenceError:  # another task claimed it first
                entry = run(kv.get(key))
        return entry.value == mine
    except (KeyNotFoundError, *_FAILURES):
        return False
