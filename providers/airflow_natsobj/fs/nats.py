"""Airflow's filesystem hook for ``ObjectStoragePath("nats://conn_id@bucket/key")``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from natsobj.fs import NatsObjectFileSystem

schemes = ["nats"]


def get_fs(
    conn_id: str | None, storage_options: dict[str, Any] | None = None
) -> NatsObjectFileSystem:
    """Connection settings come from the Airflow connection (``nats_default`` when the path
    names none); ``storage_options`` override single ConnectionSettings fields."""
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

    hook = NatsObjectStoreHook(nats_conn_id=conn_id or NatsObjectStoreHook.default_conn_name)
    options = {k: v for k, v in asdict(hook.settings).items() if v is not None}
    options.update(storage_options or {})
    return NatsObjectFileSystem(**options)
