"""What ``airflow providers`` and the connection form learn about this package.

Connection fields are declared here (``conn-fields``/``ui-field-behaviour``, the Airflow 3.2+
way) so the UI and CLI never have to import the hook to render the form; the fields that set
``ConnectionSettings`` are generated from its table (``natsobj.settings.SETTINGS``).
"""

from __future__ import annotations

from typing import Any

from airflow_natsobj.connection import SETTINGS_EXTRAS
from natsobj.settings import SETTINGS, Setting

_TEXT = {"type": ["string", "null"]}
_SECRET = {"type": ["string", "null"], "format": "password"}


def _field(label: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"label": label, "description": description, "schema": schema or _TEXT}


def _schema(row: Setting) -> dict[str, Any]:
    """The form input of a table row: a password input for a secret, a choice, a number or a
    check box by the kind of value it takes."""
    if row.secret:
        return _SECRET
    if row.choices:
        return {"type": ["string", "null"], "enum": [*row.choices, None]}
    if row.kind is float:
        return {"type": ["number", "null"]}
    if row.kind is bool:
        return {"type": ["boolean", "null"]}
    return _TEXT


# The server extras, then one field per ConnectionSettings field the extras set (the table's
# label and help); Login and Password are the connection's own fields.
CONN_FIELDS: dict[str, dict[str, Any]] = {
    "servers": _field(
        "Servers",
        "Comma-separated server URLs (nats://h1:4222,nats://h2:4222); overrides Host/Port.",
    ),
    "embedded": _field(
        "Embedded server",
        "Start or reuse a local nats-server (data in $NATSOBJ_DATA_DIR or ./.natsobj).",
        {"type": ["boolean", "null"], "default": False},
    ),
    "embedded_dir": _field(
        "Embedded data directory",
        "Absolute data directory of the embedded server (implies Embedded server).",
    ),
    **{
        extra: _field(SETTINGS[field].label, SETTINGS[field].help, _schema(SETTINGS[field]))
        for extra, field in SETTINGS_EXTRAS.items()
    },
}


def get_provider_info() -> dict[str, Any]:
    integration = "NATS Object Store"
    return {
        "package-name": "natsobj",
        "name": "NATS Object Store",
        "description": "NATS JetStream Object Store: hook, operators, watch-driven sensors, "
        "asset triggers and the ``natsobj`` common-messaging queue, and ``nats://`` "
        "ObjectStoragePath.",
        "versions": ["0.2.0", "0.1.0"],
        "integrations": [
            {
                "integration-name": integration,
                "external-doc-url": "https://docs.nats.io/nats-concepts/jetstream/obj_store",
                "tags": ["software"],
            }
        ],
        "hooks": [
            {
                "integration-name": integration,
                "python-modules": ["airflow_natsobj.hooks.object_store"],
            }
        ],
        "operators": [
            {
                "integration-name": integration,
                "python-modules": [
                    "airflow_natsobj.operators.object_store",
                    "airflow_natsobj.operators.copy",
                    "airflow_natsobj.operators.listing",
                    "airflow_natsobj.operators.transform",
                    "airflow_natsobj.operators.archive",
                    "airflow_natsobj.operators.store_metadata",
                    "airflow_natsobj.operators.versions",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": integration,
                "python-modules": ["airflow_natsobj.sensors.object_store"],
            }
        ],
        "triggers": [
            {
                "integration-name": integration,
                "python-modules": ["airflow_natsobj.triggers.object_store"],
            }
        ],
        "queues": ["airflow_natsobj.queues.object_store.NatsObjectMessageQueueProvider"],
        "filesystems": ["airflow_natsobj.fs.nats"],
        "remote-logging": [
            {
                "classpath": "airflow_natsobj.log.nats_task_handler.NatsRemoteLogIO",
                "scheme": "nats",
            }
        ],
        "asset-uris": [
            {
                "schemes": ["nats"],
                "handler": "airflow_natsobj.assets.sanitize_uri",
                "factory": "airflow_natsobj.assets.create_asset",
                "to_openlineage_converter": "airflow_natsobj.assets.convert_asset_to_openlineage",
            }
        ],
        "connection-types": [
            {
                "connection-type": "nats",
                "hook-class-name": "airflow_natsobj.hooks.object_store.NatsObjectStoreHook",
                "hook-name": "NATS Object Store",
                "conn-fields": CONN_FIELDS,
                "ui-field-behaviour": {
                    "hidden-fields": ["schema"],
                    "relabeling": {"login": "User"},
                    "placeholders": {
                        "host": "127.0.0.1, or a URL: nats://h1:4222,nats://h2:4222 or embedded",
                        "port": "4222",
                        "login": "NATS user (optional)",
                        "password": "NATS password (optional)",
                    },
                },
            }
        ],
    }
