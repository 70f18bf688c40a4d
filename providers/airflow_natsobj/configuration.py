"""Airflow's configuration, from where the running Airflow offers it: ``airflow.sdk.conf``
from 3.2 on, ``airflow.configuration.conf`` (the same parser) in 3.1. The provider's modules
import ``conf`` from here, so the difference is stated once."""

from __future__ import annotations

try:
    from airflow.sdk import conf
except ImportError:  # Airflow 3.1
    from airflow.configuration import conf

__all__ = ["conf"]
