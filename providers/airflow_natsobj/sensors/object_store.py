"""Wait for an object to appear or change: poke with get_info/list, or defer to a watch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.exceptions import AirflowProviderDeprecationWarning
from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

import natsobj.errors
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.options import rendered_sequence
from airflow_natsobj.triggers.object_store import NatsObjectTrigger
from natsobj.deprecation import warn_deprecated
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.matching import OPTION_OF_KIND, MatchKind, NameMatcher
from natsobj.model import ObjectInfo

if TYPE_CHECKING:
    from airflow.sdk import Context


def _raise_from_payload(event: dict[str, Any]) -> None:
    """Re-raise the trigger's error as the natsobj error it was, message unchanged."""
    error_type = getattr(natsobj.errors, str(event.get("error_type")), None)
    if isinstance(error_type, type) and issubclass(error_type, NatsObjError):
        raise error_type(event.get("message", ""), hint="")
    raise ValueError(event.get("message", "the NATS trigger failed"))


class NatsObjectSensor(BaseSensorOperator):
    """Succeed when a live object named ``name`` exists, or one matching ``glob`` or ``regex``
    (give exactly one; globs follow ``natsobj.matching``: ``*`` within a segment, ``**`` across).

    ``after_sequence`` (templated) waits for a change: only meta records newer than that stream
    sequence count, e.g. ``"{{ ti.xcom_pull('put')['sequence'] }}"``. ``check_fn(ObjectInfo)``
    filters candidates. The matched ObjectInfo dict is the task's XCom return value.
    Deferrable mode waits on a watch in the triggerer; it is the default when
    ``[operators] default_deferrable`` is set.
    """

    template_fields: Sequence[str] = ("bucket", "name", "glob", "regex", "after_sequence")
    ui_color = "#b9e2d5"

    def __init__(
        self,
        *,
        bucket: str,
        name: str | None = None,
        glob: str | None = None,
        regex: str | None = None,
        after_sequence: int | str | None = None,
        check_fn: Callable[[ObjectInfo], bool] | None = None,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        match: MatchKind | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if match is not None:  # the pre-0.2 spelling: name= plus match=
            warn_deprecated(
                f"NatsObjectSensor(name=..., match={match!r})",
                f"NatsObjectSensor({OPTION_OF_KIND[match]}=...)",
                category=AirflowProviderDeprecationWarning,
            )
            if match == "glob":
                name, glob = None, name
            elif match == "regex":
                name, regex = None, name
        self.bucket = bucket
        self.name = name
        self.glob = glob
        self.regex = regex
        self.after_sequence = after_sequence
        self.check_fn = check_fn
        self.nats_conn_id = nats_conn_id
        self.deferrable = deferrable

    # -- shared -----------------------------------------------------------------------------------

    def _matcher(self) -> NameMatcher:
        return NameMatcher.from_options(name=self.name, glob=self.glob, regex=self.regex)

    def _after(self) -> int | None:
        return rendered_sequence(self.after_sequence, f"{self.task_id}: after_sequence")

    def _accept(self, info: ObjectInfo, after: int | None) -> bool:
        if info.deleted or (after is not None and (info.sequence or 0) <= after):
            return False
        return self.check_fn is None or bool(self.check_fn(info))

    # -- poke mode --------------------------------------------------------------------------------

    def poke(self, context: Context) -> PokeReturnValue | bool:
        matcher, after = self._matcher(), self._after()
        with NatsObjectStoreHook(nats_conn_id=self.nats_conn_id) as hook:
            store = hook.get_store(self.bucket)
            if matcher.exact_name is not None:
                try:
                    candidates = [store.get_info(matcher.exact_name)]
                except ObjectNotFound:
                    candidates = []
            else:
                candidates = sorted(
                    (
                        i
                        for i in store.iter_list(prefix=matcher.literal_prefix)
                        if matcher.matches(i.name)
                    ),
                    key=lambda i: i.sequence or 0,
                )
        for info in candidates:
            if self._accept(info, after):
                return PokeReturnValue(is_done=True, xcom_value=info.as_dict())
        self.log.info("waiting for nats://%s/%s", self.bucket, matcher.describe())
        return False

    # -- deferrable mode --------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self._matcher()  # a bad regex fails here, not in the triggerer
        deadline = datetime.now(UTC) + timedelta(seconds=self.timeout)
        self._defer(self._after(), deadline)

    def _defer(self, after: int | None, deadline: datetime) -> None:
        self.defer(
            trigger=NatsObjectTrigger(
                bucket=self.bucket,
                name=self.name,
                glob=self.glob,
                regex=self.regex,
                after_sequence=after,
                nats_conn_id=self.nats_conn_id,
            ),
            method_name="execute_complete",
            kwargs={"deadline": deadline.isoformat()},
            timeout=max(deadline - datetime.now(UTC), timedelta(seconds=1)),
        )

    def execute_complete(
        self, context: Context, event: dict[str, Any], deadline: str | None = None
    ) -> dict[str, Any]:
        if event.get("status") != "success":
            _raise_from_payload(event)
        info = ObjectInfo.from_dict(event["object"])
        if self.check_fn is not None and not self.check_fn(info):
            self.log.info(
                "nats://%s/%s failed check_fn; waiting for the next", self.bucket, info.name
            )
            until = datetime.fromisoformat(deadline) if deadline else datetime.now(UTC)
            self._defer(info.sequence, until)
        self.log.info("nats://%s/%s is there (sequence %s)", self.bucket, info.name, info.sequence)
        return info.as_dict()
