"""One IO manager for every artifact: assets and op outputs become objects in one bucket."""

from __future__ import annotations

import os
import typing
from datetime import timedelta
from typing import Any

from dagster import (
    ConfigurableIOManager,
    DagsterInvariantViolationError,
    InputContext,
    OutputContext,
)
from pydantic import Field

from dagster_natsobj import naming
from dagster_natsobj.errors import UntrustedPickle, VersionNotPinnable, dagster_words
from dagster_natsobj.handlers import (
    CONTENT_TYPE,
    TTL,
    ParquetWrite,
    PickleHandler,
    Target,
    is_mapping_annotation,
    unwrap_annotation,
)
from dagster_natsobj.metadata import output_metadata
from dagster_natsobj.options import config_field, resolved, table_validator
from dagster_natsobj.registry import handler_for_output, handler_for_stored, handler_for_type
from dagster_natsobj.resource import (
    SECRET_HINT,
    NatsObjectStoreResource,
    open_store,
    resolve_value,
)
from dagster_natsobj.versions import input_versions, input_words
from natsobj.errors import ObjectNotFound, in_words_of

PICKLE_KEY_ENV = "NATSOBJ_PICKLE_KEY"

_NO_CREATE = (
    "Bucket creation is off: create it (`natsobj store create {bucket}`) or set "
    "create_bucket=True on NatsObjectStoreIOManager."
)
_NOTHING_STORED = (
    "Nothing was ever stored there: materialize the upstream asset first, or check the IO "
    "manager's bucket (and any natsobj/bucket metadata on the upstream asset)."
)


class NatsObjectStoreIOManager(ConfigurableIOManager):
    """Stores outputs in a NATS object store bucket and loads inputs from it.

    Asset ``a/b`` lands at ``<prefix>/a/b`` (``.../<partition>`` when partitioned); op outputs
    at ``<prefix>/storage/<run_id>/<step>/<output>``. The format follows the value's type:
    bytes/str raw, pandas, polars (LazyFrames too) and Arrow as Parquet, PySpark through the
    executors, JSON-native values (dicts, lists, numbers...) as JSON, else pickle.
    Loading follows the input's annotation; what a stored object says about itself picks the
    format only for an untyped input, and never pickle on its own (docs/dagster.md, "Pickles
    and trust").
    """

    resource: NatsObjectStoreResource = Field(
        default_factory=NatsObjectStoreResource,
        description="The NATS connection (defaults to the embedded server).",
    )
    bucket: str = Field(default="dagster", description="Object store bucket for all outputs.")
    prefix: str = Field(default="dagster", description="Name prefix for every object written.")
    create_bucket: bool = Field(
        default=True, description="Create the bucket when it does not exist yet."
    )
    pickle_signing_key: str | None = Field(
        default=None,
        repr=False,
        description="HMAC-SHA256 key: pickles are signed on write, and an unsigned or forged "
        f"pickle is refused on read. Unset: the {PICKLE_KEY_ENV} environment variable. "
        f"{SECRET_HINT}",
    )
    unpickle_untyped_inputs: bool = Field(
        default=False,
        description="Without a signing key, unpickle an input with no type annotation (or Any) "
        "when the stored object says it is a pickle. Unpickling runs code: only for a bucket "
        "whose every writer you trust.",
    )
    # The options of put, get and Parquet writes: named, described, checked and defaulted by
    # their rows of natsobj.operation_options (tests/contract/test_dagster.py holds them to it).
    ttl: str | None = config_field(
        "put",
        "ttl",
        "An output's natsobj/ttl definition metadata overrides it. Not applied to PySpark "
        "DataFrames.",
    )
    allow_missing_digest: bool | None = config_field("get", "allow_missing_digest")
    compression: str | None = config_field("write_parquet", "compression")
    dictionary: bool | None = config_field(
        "write_parquet",
        "dictionary",
        "Not applied to polars LazyFrames: polars' streaming writer chooses per column.",
    )
    row_group_rows: int | None = config_field("write_parquet", "row_group_rows")
    pin_materialized: bool | None = config_field(
        "version",
        "pin_materialized",
        "An input's own pin_materialized (or version_id) metadata overrides it.",
    )

    _check_options = table_validator("put", "get", "write_parquet", "version")

    # -- names -------------------------------------------------------------------------------

    def _target_names(self, context: InputContext | OutputContext) -> dict[str, str]:
        """Partition key (or "" when unpartitioned) -> object name, in the context's order."""
        _, pinned = naming.pinned_location(context)
        if pinned is not None:
            return {"": pinned}
        if context.has_asset_key:
            key_path = context.asset_key.path
            if context.has_asset_partitions:
                return {
                    key: naming.asset_object_name(self.prefix, key_path, key)
                    for key in context.asset_partition_keys
                }
            return {"": naming.asset_object_name(self.prefix, key_path, None)}
        return {"": naming.op_output_object_name(self.prefix, context.get_identifier())}

    def _bucket(self, context: InputContext | OutputContext) -> str:
        bucket, _ = naming.pinned_location(context)
        return bucket or self.bucket

    def _ttl(self, context: OutputContext) -> timedelta | None:
        """The output's ``natsobj/ttl`` metadata, else the IO manager's ``ttl``, parsed here so
        a typo fails the step before anything is stored."""
        given = naming.pinned_ttl(context) or self.ttl
        where = (
            f"asset {context.asset_key.to_user_string()!r}"
            if context.has_asset_key
            else f"output {context.name!r}"
        )
        ttl: timedelta | None = resolved("put", {"ttl": given}, where=where)["ttl"]
        return ttl

    def _parquet(self) -> ParquetWrite:
        return ParquetWrite(**resolved("write_parquet", self))

    def _allow_missing_digest(self) -> bool:
        return bool(resolved("get", self)["allow_missing_digest"])

    def _pickle_key(self) -> bytes | None:
        """The configured signing key, else the environment's; None when neither is set."""
        key = resolve_value(self.pickle_signing_key) or os.environ.get(PICKLE_KEY_ENV)
        return key.encode("utf-8") if key else None

    # -- IO ----------------------------------------------------------------------------------

    @in_words_of(dagster_words)
    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if obj is None and _annotation(context) in (type(None), None):
            return  # an op with no return value has nothing to store
        names = self._target_names(context)
        if len(names) != 1:
            raise ValueError(
                f"output {context.name!r} covers {len(names)} partitions; "
                "NatsObjectStoreIOManager stores one object per partition, so materialize "
                "one partition per run (or use a single-run backfill policy with one key)."
            )
        ((partition, name),) = names.items()
        handler = handler_for_output(_annotation(context), obj)
        settings = self.resource.settings()
        object_meta: dict[str, Any] = dict(_object_metadata(context, partition))
        content_type = naming.pinned_content_type(context)
        if content_type:
            object_meta[CONTENT_TYPE] = content_type
        ttl = self._ttl(context)
        if ttl is not None:
            object_meta[TTL] = ttl
        bucket = self._bucket(context)
        with self.resource.get_client() as client:
            store = open_store(
                client,
                bucket,
                create=self.create_bucket,
                missing_hint=_NO_CREATE,
                settings=self.resource.bucket_settings,
            )
            target = Target(
                store, settings, bucket, name, self._pickle_key(), parquet=self._parquet()
            )
            stored = handler.save(target, obj, object_meta)
        context.add_output_metadata(output_metadata(target, handler, stored))
        context.log.debug(f"stored {handler.type_name} at {target.uri}")

    @in_words_of(dagster_words)
    def load_input(self, context: InputContext) -> Any:
        annotation = _annotation(context)
        names = self._target_names(context)
        want_dict = context.has_asset_partitions and (
            len(names) > 1 or is_mapping_annotation(annotation)
        )
        input_meta = context.definition_metadata or {}
        allow_missing = bool(input_meta.get("allow_missing_partitions"))
        columns = _columns(input_meta.get("columns"))
        bucket = self._bucket(context)
        versions = input_versions(context, bucket, names, self.pin_materialized)
        settings = self.resource.settings()
        pickle_key = self._pickle_key()
        loaded: dict[str, Any] = {}
        with self.resource.get_client() as client:
            store = open_store(client, bucket, create=False, missing_hint=_NOTHING_STORED)
            for partition, name in names.items():
                target = Target(
                    store,
                    settings,
                    bucket,
                    name,
                    pickle_key,
                    self._allow_missing_digest(),
                    columns=columns,
                    version=versions[partition],
                )
                try:
                    loaded[partition] = _load_one(
                        target, unwrap_annotation(annotation), self.unpickle_untyped_inputs
                    )
                except ObjectNotFound as exc:
                    if target.version is not None:
                        # a pin is never given up for another version, nor skipped
                        raise ObjectNotFound(
                            f"{input_words(context)} is pinned to version {target.version!r}, "
                            f"which is not there ({exc.message})",
                            bucket=bucket,
                            name=name,
                            hint="A bucket keeps the versions a write replaces only while "
                            "versioning is enabled (`natsobj store versioning BUCKET enabled`); "
                            "`natsobj ls BUCKET NAME --versions` lists those kept. Pin a kept "
                            "version, or drop the pin to load the current one.",
                        ) from exc
                    if not (allow_missing and context.has_asset_partitions):
                        raise ObjectNotFound(
                            f"no stored output for input {context.name!r}",
                            bucket=bucket,
                            name=name,
                            hint="Materialize the upstream asset (or partition) first; set "
                            "allow_missing_partitions=True in the input metadata to skip "
                            "missing partitions.",
                        ) from exc
                    context.log.warning(f"partition {partition!r} is missing at {target.uri}")
        if want_dict:
            return loaded
        return next(iter(loaded.values()), None)


def _columns(value: Any) -> tuple[str, ...] | None:
    """The input's ``columns`` metadata: a list of column names, or None for all of them."""
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(c, str) for c in value):
        raise TypeError(f'input metadata "columns" must be a list of column names, not {value!r}')
    return tuple(value)


def _annotation(context: InputContext | OutputContext) -> Any:
    """The declared Python type; ``Any`` when the context was built without one."""
    try:
        return context.dagster_type.typing_type
    except DagsterInvariantViolationError:
        return typing.Any


def _load_one(target: Target, annotation: Any, unpickle_untyped: bool) -> Any:
    """The annotation picks the handler. Only for an untyped input does the stored object,
    which any writer of the bucket can have written, pick it; and its saying "pickle" is not
    enough: that also takes a signing key (the signature then vouches for the bytes) or the
    user's explicit unpickle_untyped_inputs."""
    handler = handler_for_type(annotation)
    if handler is None:
        handler = handler_for_stored(target)
        if (
            isinstance(handler, PickleHandler)
            and target.pickle_key is None
            and not unpickle_untyped
        ):
            raise UntrustedPickle(
                "the object says it is a pickle, and the input has no type annotation: "
                "natsobj does not unpickle because of what a stored object says about itself",
                bucket=target.bucket,
                name=target.name,
                hint="Annotate the input with the type you expect (bytes loads the raw "
                "object), configure pickle_signing_key (or NATSOBJ_PICKLE_KEY) on the IO "
                "managers that write and read it, or set unpickle_untyped_inputs=True if you "
                "trust every writer of the bucket.",
            )
    if target.version is not None and not handler.reads_versions:
        raise VersionNotPinnable(
            f"the input is pinned to version {target.version!r}, and {handler.type_name} "
            "values are not loaded by version",
            bucket=target.bucket,
            name=target.name,
            hint="Drop the pin on this input (version_id, or pin_materialized=False in its "
            "metadata) to load the current version.",
        )
    return handler.load(target)


def _object_metadata(context: OutputContext, partition: str) -> dict[str, str]:
    """Provenance recorded on the object itself, readable by any NATS client."""
    meta = {"dagster.run_id": context.run_id}
    if context.has_asset_key:
        meta["dagster.asset_key"] = context.asset_key.to_user_string()
    else:
        meta["dagster.step"] = context.step_key
        meta["dagster.output"] = context.name
    if partition:
        meta["dagster.partition"] = str(partition)
    return meta
