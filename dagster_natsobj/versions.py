"""Which version of its object each input loads: the current one, unless the input pins one.

A pin is the input's ``version_id`` metadata (``AssetIn(metadata={"version_id": ...})``), or,
with ``pin_materialized``, the ``version_id`` that the upstream's latest materialization of the
partition recorded in the Dagster instance: a backfill then reads the bytes Dagster wrote,
though another writer has replaced the object since. Both are rows of the options table
(``version.version``, ``version.pin_materialized``), parsed there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import AssetRecordsFilter, DagsterInvariantViolationError, InputContext

from dagster_natsobj.errors import VersionNotPinnable
from dagster_natsobj.options import FACE, option, resolved

# The output metadata key a materialization records its object's version id under, and the
# input metadata key that pins one: the same word, so a recorded id can be given as a pin.
VERSION_ID_KEY = option("version", "version").spelled(FACE)
PIN_MATERIALIZED_KEY = option("version", "pin_materialized").spelled(FACE)


def input_versions(
    context: InputContext, bucket: str, names: Mapping[str, str], pin_materialized: object
) -> dict[str, str | None]:
    """Partition key -> the version id its object loads at (None: the current version).

    ``pin_materialized`` is the IO manager's setting; the input's own metadata overrides it."""
    meta = context.definition_metadata or {}
    where = input_words(context)
    pin = resolved(
        "version",
        {
            VERSION_ID_KEY: meta.get(VERSION_ID_KEY),
            PIN_MATERIALIZED_KEY: meta.get(PIN_MATERIALIZED_KEY, pin_materialized),
        },
        where=where,
    )
    if pin["version"] is not None:
        if len(names) != 1:
            raise ValueError(
                f"{where}: {VERSION_ID_KEY} pins one object's version, and the input loads "
                f"{len(names)} partitions; load one partition per run, or pin with "
                f"{PIN_MATERIALIZED_KEY}=True (each partition's recorded version)"
            )
        return dict.fromkeys(names, pin["version"])
    if not (pin["pin_materialized"] and context.has_asset_key):
        return dict.fromkeys(names)
    return {
        partition: _materialized(context, bucket, partition, name)
        for partition, name in names.items()
    }


def input_words(context: InputContext) -> str:
    """How an error names the input: by its name, which a unit test's context may lack."""
    try:
        return f"input {context.name!r}"
    except DagsterInvariantViolationError:
        return "the input"


def _materialized(context: InputContext, bucket: str, partition: str, name: str) -> str:
    """The version id the upstream's latest materialization of ``partition`` recorded for
    the object ``name`` in ``bucket``; VersionNotPinnable when there is none to pin to."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(
            asset_key=context.asset_key, asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    asset = context.asset_key.to_user_string() + (f" partition {partition!r}" if partition else "")
    if not records or records[0].asset_materialization is None:
        raise VersionNotPinnable(
            f"{PIN_MATERIALIZED_KEY} is set and asset {asset} was never materialized",
            bucket=bucket,
            name=name,
        )
    recorded = _values(records[0].asset_materialization.metadata)
    version: str | None = option("version", "version").parse(recorded.get(VERSION_ID_KEY))
    if version is None or (recorded.get("bucket"), recorded.get("object")) != (bucket, name):
        raise VersionNotPinnable(
            f"{PIN_MATERIALIZED_KEY} is set and the latest materialization of asset {asset} "
            f"(run {records[0].run_id}) recorded no version of this object",
            bucket=bucket,
            name=name,
        )
    return version


def _values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {key: getattr(value, "value", value) for key, value in metadata.items()}
