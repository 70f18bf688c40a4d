"""Dagster integration for natsobj: a resource, one IO manager for every artifact type,
a meta-stream sensor and digest-versioned source assets."""

from dagster_natsobj.io_manager import NatsObjectStoreIOManager
from dagster_natsobj.observe import make_nats_object_observable
from dagster_natsobj.resource import NatsObjectStoreResource
from dagster_natsobj.sensors import make_nats_object_sensor

__all__ = [
    "NatsObjectStoreIOManager",
    "NatsObjectStoreResource",
    "make_nats_object_observable",
    "make_nats_object_sensor",
]
