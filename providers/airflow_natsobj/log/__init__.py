"""Airflow task logs kept in a NATS object store (``[logging] remote_base_log_folder =
nats://bucket/prefix``): the remote log IO in ``nats_task_handler`` and the logging config
users point ``[logging] logging_config_class`` at in ``config``."""
