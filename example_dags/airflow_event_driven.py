"""A DAG that runs whenever a CSV lands in a NATS bucket: no polling, no sensor slot.

The ``AssetWatcher`` runs ``NatsObjectChangeTrigger`` in the triggerer; it watches the bucket's
meta stream and turns every matching put into an asset event, whose ``payload`` is the
ObjectInfo (name, size, digest, nuid, sequence). The scheduler starts one run per event batch.
The trigger keeps the last stream sequence in the triggerer's asset state store, so a restarted
triggerer neither replays old puts nor misses the ones made while it was down.

Try it (scheduler, triggerer, dag-processor and api-server running)::

    airflow dags unpause airflow_event_driven
    natsobj put demo incoming/orders.csv ./orders.csv        # or any client, any language

A manual run (``airflow dags test airflow_event_driven``) has no triggering events; it
summarizes whatever is under ``incoming/`` instead.
"""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import datetime
from typing import Any

from airflow.sdk import Asset, AssetWatcher, dag, task
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
INCOMING = "incoming/"

incoming_csv = Asset(
    f"nats://{BUCKET}/{INCOMING}",
    watchers=[
        AssetWatcher(
            name="nats_incoming_csv",
            # "all": CSVs that landed before the watcher first started count too.
            trigger=NatsObjectChangeTrigger(
                bucket=BUCKET, glob=INCOMING + "**.csv", start_at="all"
            ),
        )
    ],
)


def summarize_csv(data: bytes) -> dict[str, Any]:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8", errors="replace"))))
    header, body = (rows[0], rows[1:]) if rows else ([], [])
    return {"columns": header, "rows": len(body)}


@dag(
    schedule=[incoming_csv],
    start_date=datetime(2024, 6, 1),
    catchup=False,
    tags=["natsobj", "example", "event-driven"],
    doc_md=__doc__,
)
def airflow_event_driven() -> None:
    @task
    def landed_objects(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
        """The ObjectInfo of every put that started this run (or, run by hand, of every CSV
        currently under incoming/)."""
        events = triggering_asset_events[incoming_csv] if triggering_asset_events else []
        infos = [event.extra["payload"] for event in events if "payload" in event.extra]
        if not infos:
            with NatsObjectStoreHook() as hook:
                if BUCKET not in hook.store_names():
                    hook.create_store(BUCKET)
                infos = [
                    info.as_dict()
                    for info in hook.list(BUCKET)
                    if info.name.startswith(INCOMING) and info.name.endswith(".csv")
                ]
        for info in infos:
            print(
                f"LANDED nats://{BUCKET}/{info['name']} seq={info['sequence']} "
                f"{info['size']} B {info['digest']}"
            )
        return infos

    @task
    def summarize(infos: list[dict[str, Any]]) -> list[str]:
        """Read each landed CSV (the exact version that fired, checked by digest) and put a
        small JSON summary next to it under summaries/."""
        written = []
        with NatsObjectStoreHook() as hook:
            for info in infos:
                if info.get("deleted"):
                    continue
                data = hook.get_bytes(BUCKET, info["name"])
                summary = {
                    "object": info["name"],
                    "digest": info["digest"],
                    "sequence": info["sequence"],
                    **summarize_csv(data),
                }
                name = "summaries/" + info["name"].removeprefix(INCOMING) + ".json"
                hook.put(
                    BUCKET,
                    name,
                    json.dumps(summary),
                    metadata={"source": info["name"]},
                    headers={"Content-Type": "application/json"},
                )
                print(f"SUMMARY nats://{BUCKET}/{name}: {summary['rows']} rows")
                written.append(name)
        return written

    summarize(landed_objects())


airflow_event_driven()
