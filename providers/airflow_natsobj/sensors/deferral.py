"""A deferred sensor whose deadline passes in the triggerer skips under ``soft_fail`` (or
``never_fail``) as in poke mode, on every Airflow 3.

Airflow 3.1.0 to 3.1.7's ``BaseSensorOperator.resume_execution`` turns the triggerer's deferral
timeout into ``AirflowSensorTimeout`` inside an ``except`` clause, so its sibling clause that
skips a soft-failing sensor never sees it and the task fails instead; 3.1.8 and 3.2 nest the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator

try:
    from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException
except ImportError:  # Airflow 3.1
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowSensorTimeout,
        AirflowSkipException,
    )

if TYPE_CHECKING:
    from airflow.sdk import Context


class DeferrableSensor(BaseSensorOperator):
    """Base of natsobj's deferrable sensors: a timeout that reaches the task after deferral is
    skipped where the sensor asks for it, as Airflow's own poke loop does. Where Airflow already
    skipped it, nothing here runs."""

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context
    ) -> Any:
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except AirflowSensorTimeout as e:
            if self.soft_fail:
                raise AirflowSkipException("Skipping due to soft_fail is set to True.") from e
            if self.never_fail:
                raise AirflowSkipException("Skipping due to never_fail is set to True.") from e
            raise
