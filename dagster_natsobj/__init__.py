"""Dagster integration for natsobj: a resource, one IO manager for every artifact type,
a meta-stream sensor, digest-versioned external assets, a compute log manager and Dagster
Pipes over the store."""

from natsobj.extras import require_extra

require_extra("dagster", "dagster_natsobj")

from dagster_natsobj.compute_logs import NatsComputeLogManager
from dagster_natsobj.errors import UntrustedPickle, VersionNotPinnable
from dagster_natsobj.handlers import FileHandler, Handler, Stored, Target
from dagster_natsobj.io_manager import NatsObjectStoreIOManager
from dagster_natsobj.observe import make_nats_object_observable, nats_object_observable_asset
from dagster_natsobj.pipes import (
    PipesNatsContextInjector,
    PipesNatsLogReader,
    PipesNatsMessageReader,
)
from dagster_natsobj.registry import register_handler, unregister_handler
from dagster_natsobj.resource import NatsObjectStoreResource
from dagster_natsobj.sensors import make_nats_object_sensor

__all__ = [
    "FileHandler",
    "Handler",
    "NatsComputeLogManager",
    "NatsObjectStoreIOManager",
    "NatsObjectStoreResource",
    "PipesNatsContextInjector",
    "PipesNatsLogReader",
    "PipesNatsMessageReader",
    "Stored",
    "Target",
    "UntrustedPickle",
    "VersionNotPinnable",
    "make_nats_object_observable",
    "make_nats_object_sensor",
    "nats_object_observable_asset",
    "register_handler",
    "unregister_handler",
]
