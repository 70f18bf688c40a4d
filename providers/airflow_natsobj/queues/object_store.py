"""The object store's change feed as a common-messaging queue, scheme ``natsobj``.

Airflow's common vocabulary for event-driven scheduling is common-messaging's
``MessageQueueTrigger``: ``MessageQueueTrigger(scheme="natsobj", bucket=..., glob=...)`` in an
``AssetWatcher`` finds this provider by its scheme (the ``queues`` entry of the provider info,
as the Amazon provider registers SQS) and runs ``NatsObjectChangeTrigger`` with the same
keyword arguments. That trigger stays the engine: every put (and with ``include_deletes``,
every delete) is one event, its cursor kept in the triggerer's asset state store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.providers.common.messaging.providers.base_provider import BaseMessageQueueProvider

from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

if TYPE_CHECKING:
    from airflow.triggers.base import BaseEventTrigger


class NatsObjectMessageQueueProvider(BaseMessageQueueProvider):
    """``scheme="natsobj"``: the keyword arguments are ``NatsObjectChangeTrigger``'s."""

    scheme = "natsobj"

    def trigger_class(self) -> type[BaseEventTrigger]:
        return NatsObjectChangeTrigger
