"""Airflow's hook-level lineage, from where the running Airflow offers it: ``airflow.sdk.lineage``
from 3.2 on, ``airflow.lineage.hook`` in 3.1. The hook and the tests import it from here, so
the difference is stated once."""

from __future__ import annotations

try:
    from airflow.sdk.lineage import HookLineageReader, get_hook_lineage_collector
except ImportError:  # Airflow 3.1
    from airflow.lineage.hook import (  # type: ignore[no-redef]
        HookLineageReader,
        get_hook_lineage_collector,
    )

__all__ = ["HookLineageReader", "get_hook_lineage_collector"]
