"""Wait for objects to appear or change, or for a prefix to be quiet: poke with get_info/list,
or defer to a watch."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.exceptions import AirflowProviderDeprecationWarning
from airflow.sdk import PokeReturnValue
from airflow.sdk.bases.sensor import poke_mode_only

try:
    from airflow.sdk.exceptions import AirflowSensorTimeout
except ImportError:  # Airflow 3.1
    from airflow.exceptions import AirflowSensorTimeout  # type: ignore[no-redef]

import natsobj.errors
from airflow_natsobj.configuration import conf
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.options import rendered_sequence
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.sensors.deferral import DeferrableSensor
from airflow_natsobj.triggers.object_store import NatsKeysUnchangedTrigger, NatsObjectTrigger
from natsobj.deprecation import warn_deprecated
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.matching import OPTION_OF_KIND, MatchKind, NameMatcher
from natsobj.model import ObjectInfo
from natsobj.orchestration.sensing import AllPresent, QuietPrefix

if TYPE_CHECKING:
    from airflow.sdk import Context


def _raise_from_payload(event: dict[str, Any]) -> None:
    """Re-raise the trigger's error as the natsobj error it was, message unchanged."""
    error_type = getattr(natsobj.errors, str(event.get("error_type")), None)
    if isinstance(error_type, type) and issubclass(error_type, NatsObjError):
        raise error_type(event.get("message", ""), hint="")
    raise ValueError(event.get("message", "the NATS trigger failed"))


def _timed_out(event: dict[str, Any]) -> None:
    """The trigger's deadline passed: the sensor times out as in poke mode (and
    ``BaseSensorOperator.resume_execution`` skips it instead under ``soft_fail``)."""
    raise AirflowSensorTimeout(event.get("message", "Sensor has timed out"))


def _deadline(timeout: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=timeout)


def _deferral_timeout(deadline: datetime) -> timedelta:
    return max(deadline - datetime.now(UTC), timedelta(seconds=1))


class NatsObjectSensor(DeferrableSensor):
    """Succeed when a live object named ``name`` exists, or one matching ``glob`` or ``regex``
    (give exactly one; globs follow ``natsobj.matching``: ``*`` within a segment, ``**`` across).
    Each also takes a list, like the Amazon provider's ``S3KeySensor(bucket_key=[...])``: the
    sensor succeeds once every name or pattern of the list has a live object.

    ``after_sequence`` (templated) waits for a change: only meta records newer than that stream
    sequence count, e.g. ``"{{ ti.xcom_pull('put')['sequence'] }}"``. ``check_fn(ObjectInfo)``
    filters candidates. The matched ObjectInfo dict, with its ``version_id``, is the task's XCom
    return value (a list of them, in the list's order, when a list was given).
    Deferrable mode waits on a watch in the triggerer; it is the default when
    ``[operators] default_deferrable`` is set. The trigger keeps the sensor's ``timeout`` as
    its own deadline, so ``airflow dags test`` (which runs it in line) ends on time too.
    """

    template_fields: Sequence[str] = ("bucket", "name", "glob", "regex", "after_sequence")
    ui_color = "#b9e2d5"

    def __init__(
        self,
        *,
        bucket: str,
        name: str | list[str] | None = None,
        glob: str | list[str] | None = None,
        regex: str | list[str] | None = None,
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

    def _matchers(self) -> list[NameMatcher]:
        return NameMatcher.all_from_options(name=self.name, glob=self.glob, regex=self.regex)

    @property
    def _several(self) -> bool:
        return not isinstance(self.name or self.glob or self.regex, str)

    def _after(self) -> int | None:
        return rendered_sequence(self.after_sequence, f"{self.task_id}: after_sequence")

    def _accept(self, info: ObjectInfo, after: int | None) -> bool:
        if info.deleted or (after is not None and (info.sequence or 0) <= after):
            return False
        return self.check_fn is None or bool(self.check_fn(info))

    def _result(self, found: list[ObjectInfo]) -> Any:
        for info in found:
            self.log.info(
                "nats://%s/%s is there (sequence %s)", self.bucket, info.name, info.sequence
            )
        objects = [object_payload(info) for info in found]
        return objects if self._several else objects[0]

    # -- poke mode --------------------------------------------------------------------------------

    def poke(self, context: Context) -> PokeReturnValue | bool:
        after = self._after()
        present = AllPresent(self._matchers(), accept=lambda info: self._accept(info, after))
        with NatsObjectStoreHook(nats_conn_id=self.nats_conn_id) as hook:
            store = hook.get_store(self.bucket)
            for matcher in present.matchers:
                if matcher.exact_name is not None:
                    with contextlib.suppress(ObjectNotFound):
                        present.observe(store.get_info(matcher.exact_name))
                    continue
                for info in store.iter_list(prefix=matcher.literal_prefix):
                    if matcher.matches(info.name):
                        present.observe(info)
        found = present.found()
        if found is not None:
            return PokeReturnValue(is_done=True, xcom_value=self._result(found))
        waiting = " and ".join(m.describe() for m in present.missing())
        self.log.info("waiting for nats://%s/%s", self.bucket, waiting)
        return False

    # -- deferrable mode --------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self._matchers()  # a bad regex fails here, not in the triggerer
        self._defer(self._after(), [], _deadline(self.timeout))

    def _defer(self, after: int | None, rejected: list[int], deadline: datetime) -> None:
        self.defer(
            trigger=NatsObjectTrigger(
                bucket=self.bucket,
                name=self.name,
                glob=self.glob,
                regex=self.regex,
                after_sequence=after,
                rejected=rejected,
                deadline=deadline,
                nats_conn_id=self.nats_conn_id,
            ),
            method_name="execute_complete",
            timeout=_deferral_timeout(deadline),
        )

    def execute_complete(
        self, context: Context, event: dict[str, Any], deadline: str | None = None
    ) -> Any:
        """The trigger's event. ``deadline`` is where a task deferred by an earlier release,
        whose trigger had no deadline of its own, kept it."""
        if event.get("status") == "timeout":
            _timed_out(event)
        if event.get("status") != "success":
            _raise_from_payload(event)
        found = [ObjectInfo.from_dict(each) for each in event["objects"]]
        refused = [info for info in found if self.check_fn is not None and not self.check_fn(info)]
        if refused:
            for info in refused:
                self.log.info(
                    "nats://%s/%s failed check_fn; waiting for the next", self.bucket, info.name
                )
            until = event.get("deadline") or deadline
            self._defer(
                self._after(),
                [*event.get("rejected", ()), *(info.sequence or 0 for info in refused)],
                datetime.fromisoformat(until) if until else datetime.now(UTC),
            )
        return self._result(found)


@poke_mode_only
class NatsKeysUnchangedSensor(DeferrableSensor):
    """Succeed once nothing under ``prefix`` of ``bucket_name`` was put or deleted for
    ``inactivity_period`` seconds while at least ``min_objects`` objects are there: the
    Amazon provider's ``S3KeysUnchangedSensor``, to wait for a batch of uploads to finish.

    ``previous_objects`` are names known to be there already; ``allow_delete=False`` fails the
    task (``PrefixChanged``) when an object is deleted meanwhile, else a delete is activity.
    Deferrable mode (the default under ``[operators] default_deferrable``) follows the
    bucket's change feed in the triggerer: the quiet period is measured from the puts and
    deletes the server pushes, nothing polls, and a put replacing an object counts too. Poke
    mode lists the prefix every ``poke_interval``. Either way the rule is
    ``natsobj.orchestration.sensing.QuietPrefix``; like the Amazon sensor it keeps its state in the
    running task, so ``mode="reschedule"`` is refused.
    """

    template_fields: Sequence[str] = ("bucket_name", "prefix")
    ui_color = "#b9e2d5"

    def __init__(
        self,
        *,
        bucket_name: str,
        prefix: str,
        inactivity_period: float = 60 * 60,
        min_objects: int = 1,
        previous_objects: set[str] | None = None,
        allow_delete: bool = True,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if inactivity_period < 0:
            raise ValueError("inactivity_period must be non-negative")
        self.bucket_name = bucket_name
        self.prefix = prefix
        self.inactivity_period = inactivity_period
        self.min_objects = min_objects
        self.previous_objects = set(previous_objects or ())
        self.allow_delete = allow_delete
        self.nats_conn_id = nats_conn_id
        self.deferrable = deferrable
        self._quiet: QuietPrefix | None = None

    def poke(self, context: Context) -> bool:
        now = time.monotonic()
        with NatsObjectStoreHook(nats_conn_id=self.nats_conn_id) as hook:
            listing = hook.get_store(self.bucket_name).list(prefix=self.prefix)
        if self._quiet is None:
            self._quiet = QuietPrefix(
                self.bucket_name,
                self.prefix,
                inactivity_period=self.inactivity_period,
                min_objects=self.min_objects,
                allow_delete=self.allow_delete,
                previous_objects=self.previous_objects,
                now=now,
            )
        if self._quiet.seen(listing, now):
            self.log.info("nats://%s/%s changed; counting again", self.bucket_name, self.prefix)
        if self._quiet.is_quiet(now):
            self.log.info(
                "nats://%s/%s unchanged for %ss with %s objects",
                self.bucket_name,
                self.prefix,
                self.inactivity_period,
                len(self._quiet.present),
            )
            return True
        if now >= self._quiet.quiet_at:
            self.log.warning(
                "nats://%s/%s is quiet but holds %s objects, fewer than min_objects=%s",
                self.bucket_name,
                self.prefix,
                len(self._quiet.present),
                self.min_objects,
            )
        return False

    def execute(self, context: Context) -> None:
        if not self.deferrable:
            super().execute(context)
            return
        deadline = _deadline(self.timeout)
        self.defer(
            trigger=NatsKeysUnchangedTrigger(
                bucket_name=self.bucket_name,
                prefix=self.prefix,
                inactivity_period=self.inactivity_period,
                min_objects=self.min_objects,
                previous_objects=sorted(self.previous_objects),
                allow_delete=self.allow_delete,
                deadline=deadline,
                nats_conn_id=self.nats_conn_id,
            ),
            method_name="execute_complete",
            timeout=_deferral_timeout(deadline),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> None:
        if event.get("status") == "timeout":
            _timed_out(event)
        if event.get("status") != "success":
            _raise_from_payload(event)
        self.log.info(
            "nats://%s/%s unchanged for %ss with %s objects",
            self.bucket_name,
            self.prefix,
            self.inactivity_period,
            event.get("objects"),
        )
