"""The logging config to point ``[logging] logging_config_class`` at for task logs in NATS:
``airflow_natsobj.log.config.LOGGING_CONFIG``.

Airflow reads two things from the module of that dict: ``REMOTE_TASK_LOG``, the IO the task
supervisor uploads through and the API server reads back with, and ``DEFAULT_REMOTE_CONN_ID``.
With ``[logging] remote_logging = True`` and ``remote_base_log_folder = nats://bucket/prefix``,
``REMOTE_TASK_LOG`` is ``NatsRemoteLogIO`` on ``remote_log_conn_id`` (``nats_default`` when
unset); with any other folder it is None and Airflow picks the IO of that scheme's provider.

The dict is Airflow's default one, written out here: Airflow's own module
(``airflow_local_settings``) refuses to load when remote logging names a scheme it does not
know itself, so it cannot be imported and copied while this module is in use.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from airflow_natsobj.configuration import conf
from airflow_natsobj.log.nats_task_handler import SCHEME, NatsRemoteLogIO

_LEVEL = conf.get_mandatory_value("logging", "logging_level").upper()
_FORMATTER = {
    "format": conf.get_mandatory_value("logging", "log_format"),
    "class": conf.get(
        "logging", "log_formatter_class", fallback="airflow.utils.log.timezone_aware.TimezoneAware"
    ),
}

LOGGING_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"airflow": _FORMATTER},
    "filters": {"mask_secrets_core": {"()": "airflow._shared.secrets_masker._secrets_masker"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "airflow",
            "stream": "sys.stdout",
            "filters": ["mask_secrets_core"],
        },
        # Reads the worker's file, the served log and REMOTE_TASK_LOG for the API server.
        "task": {
            "class": "airflow.utils.log.file_task_handler.FileTaskHandler",
            "formatter": "airflow",
            "base_log_folder": os.path.expanduser(
                conf.get_mandatory_value("logging", "base_log_folder")
            ),
            "filters": ["mask_secrets_core"],
        },
    },
    "loggers": {
        "airflow.task": {
            "handlers": ["task"],
            "level": _LEVEL,
            "propagate": True,
            "filters": ["mask_secrets_core"],
        },
    },
    "root": {"handlers": ["console"], "level": _LEVEL, "filters": ["mask_secrets_core"]},
}

_FOLDER = conf.get("logging", "remote_base_log_folder", fallback="") or ""
REMOTE_TASK_LOG: NatsRemoteLogIO | None = (
    NatsRemoteLogIO.from_config()
    if conf.getboolean("logging", "remote_logging", fallback=False)
    and urlsplit(_FOLDER).scheme == SCHEME
    else None
)
# The connection the task supervisor fetches for the upload when remote_log_conn_id is unset.
DEFAULT_REMOTE_CONN_ID: str | None = REMOTE_TASK_LOG.hook.nats_conn_id if REMOTE_TASK_LOG else None
