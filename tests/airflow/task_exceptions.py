"""Airflow's task exceptions from where the running Airflow has them: ``airflow.sdk.exceptions``
from 3.2, ``airflow.exceptions`` in 3.1 (the same classes; 3.2 keeps deprecated aliases)."""

from __future__ import annotations

try:
    from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException, TaskDeferred
except ImportError:  # Airflow 3.1
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowSensorTimeout,
        AirflowSkipException,
        TaskDeferred,
    )

__all__ = ["AirflowSensorTimeout", "AirflowSkipException", "TaskDeferred"]
