"""A bucket's settings as one value, nats.go's ``ObjectStoreConfig``: every face (the client,
the blocking facade, the CLI, the Airflow operator, the filesystem) takes a ``StoreConfig`` or
the keywords that build one, and the faces configured by strings (Spark options, a Dagster
resource's config) go through ``StoreConfig.from_options``, so a setting added here reaches all
of them.

``STORE_SETTINGS`` is the table: the field names, each with its help text and the JetStream
stream-config key it sets (``fields(StoreConfig)``'s metadata). Faces that render options
(the CLI) or document them loop over it instead of restating it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from typing import Any, TypedDict

from natsobj.lifecycle import DEFAULT_DELETE_MARKER_TTL, checked_ttl
from natsobj.model import user_metadata
from natsobj.names import all_chunks_subject, all_meta_subject, check_bucket, stream_name
from natsobj.parsing import parse_bool, parse_duration

STORAGE_TYPES = ("file", "memory")
_NANOS = 1_000_000_000


def _about(help_text: str, stream_key: str, *, json_example: str = "") -> dict[str, str]:
    """A StoreConfig field's row of the table: its help text for the faces, the stream-config
    key it sets, and for a field that is a mapping, an example of the JSON object its text
    form (``from_options``) takes."""
    row = {"help": help_text, "stream_key": stream_key}
    if json_example:
        row["json"] = json_example
    return row


@dataclass(frozen=True)
class Placement:
    """Where the stream's replicas live (JetStream's placement): a cluster, server tags, or
    both. ``{"cluster": ..., "tags": [...]}`` is accepted wherever a Placement is."""

    cluster: str | None = None
    tags: tuple[str, ...] = ()

    @classmethod
    def coerce(cls, value: Placement | Mapping[str, Any] | None) -> Placement | None:
        """A Placement from the dict form (Airflow templates, JSON); an empty one is none."""
        if value is None or isinstance(value, Placement):
            return value or None
        if not isinstance(value, Mapping):
            raise TypeError(f"placement must be a Placement or a mapping, not {value!r}")
        unknown = sorted(set(value) - {"cluster", "tags"})
        if unknown:
            raise ValueError(f"placement takes 'cluster' and 'tags', not {unknown}")
        tags = value.get("tags") or ()
        if isinstance(tags, str):
            tags = [t for t in tags.split(",") if t.strip()]
        placement = cls(cluster=value.get("cluster") or None, tags=tuple(t.strip() for t in tags))
        return placement or None

    def __bool__(self) -> bool:
        return bool(self.cluster or self.tags)

    def as_dict(self) -> dict[str, Any]:
        """The JetStream form: only the parts that are set."""
        out: dict[str, Any] = {}
        if self.cluster:
            out["cluster"] = self.cluster
        if self.tags:
            out["tags"] = list(self.tags)
        return out


class StoreSettings(TypedDict, total=False):
    """The keywords of ``create_store``/``ensure_store``/``update_store``: StoreConfig's
    fields (a test holds the two equal). None means "the default" when creating and "keep
    it" when updating. ``ttl`` is seconds or a timedelta."""

    description: str | None
    metadata: Mapping[str, str] | None
    ttl: float | timedelta | None
    max_bytes: int | None
    storage: str | None
    replicas: int | None
    placement: Placement | Mapping[str, Any] | None
    compression: bool | None
    allow_msg_ttl: bool | None
    delete_marker_ttl: float | timedelta | None


@dataclass(frozen=True)
class StoreConfig:
    """What a bucket is created (or updated) with. Values are checked and normalized here,
    once: ``ttl`` in seconds becomes a timedelta, a placement dict a ``Placement``, a
    ``max_bytes`` of 0 unlimited, ``compression="true"`` (a templated string) True."""

    bucket: str
    description: str = field(default="", metadata=_about("What the bucket holds.", "description"))
    metadata: Mapping[str, str] = field(
        default_factory=dict,
        metadata=_about(
            "Bucket metadata: string keys and values.", "metadata", json_example='{"owner": "etl"}'
        ),
    )
    ttl: timedelta | None = field(
        default=None,
        metadata=_about(
            "Expire objects this long after they were written (none: never).", "max_age"
        ),
    )
    max_bytes: int = field(
        default=-1,
        metadata=_about("Size limit of the bucket in bytes (-1: unlimited).", "max_bytes"),
    )
    storage: str = field(
        default="file", metadata=_about("Where servers keep the data: file or memory.", "storage")
    )
    replicas: int = field(
        default=1, metadata=_about("How many servers keep a copy (1 to 5).", "num_replicas")
    )
    placement: Placement | None = field(
        default=None,
        metadata=_about(
            "The cluster and server tags the replicas are placed on.",
            "placement",
            json_example='{"cluster": "c1", "tags": ["ssd"]}',
        ),
    )
    compression: bool = field(
        default=False, metadata=_about("Compress stored chunks (s2).", "compression")
    )
    allow_msg_ttl: bool | None = field(
        default=None,
        metadata=_about(
            "Per-object expiry (put ttl=, lifecycle rules; nats-server 2.11+, cannot be turned"
            " off again). Default: on where the server has it.",
            "allow_msg_ttl",
        ),
    )
    delete_marker_ttl: timedelta | None = field(
        default=None,
        metadata=_about(
            "How long the delete marker an expiry leaves stays, for watchers to see; also the"
            f" shortest object TTL (default {int(DEFAULT_DELETE_MARKER_TTL.total_seconds())}s).",
            "subject_delete_marker_ttl",
        ),
    )

    def __post_init__(self) -> None:
        check_bucket(self.bucket)
        if self.storage not in STORAGE_TYPES:
            raise ValueError(f"storage must be 'file' or 'memory', not {self.storage!r}")
        metadata = dict(self.metadata or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError(f"bucket metadata keys and values must be strings: {metadata!r}")
        normalized = {
            "description": self.description or "",
            "metadata": metadata,
            "ttl": _ttl(self.ttl),
            "max_bytes": int(self.max_bytes) or -1,
            "replicas": int(self.replicas),
            "placement": Placement.coerce(self.placement),
            "compression": parse_bool(self.compression, what="compression"),
            "allow_msg_ttl": (
                None
                if self.allow_msg_ttl is None
                else parse_bool(self.allow_msg_ttl, what="allow_msg_ttl")
            ),
            "delete_marker_ttl": _ttl(self.delete_marker_ttl),
        }
        for name, value in normalized.items():
            object.__setattr__(self, name, value)
        marker = self.delete_marker_ttl
        if marker is not None:
            checked_ttl(marker, "delete_marker_ttl")
        if marker is not None and self.allow_msg_ttl is False:
            raise ValueError("delete_marker_ttl needs allow_msg_ttl (per-object expiry)")

    @classmethod
    def build(cls, bucket: str | StoreConfig, **settings: Any) -> StoreConfig:
        """The config a face's keywords describe: ``bucket`` (a name, or a config to start
        from) with each keyword that is not None replacing its field."""
        unknown = sorted(set(settings) - set(STORE_SETTINGS))
        if unknown:
            raise TypeError(f"unknown store settings {unknown}; known: {list(STORE_SETTINGS)}")
        base = bucket if isinstance(bucket, StoreConfig) else cls(bucket)
        given = {k: v for k, v in settings.items() if v is not None}
        return replace(base, **given) if given else base

    @classmethod
    def from_options(
        cls, bucket: str | StoreConfig, options: Mapping[str, str], *, prefix: str = ""
    ) -> StoreConfig:
        """The config string options describe, for the faces configured by text (Spark's
        ``bucket_ttl=7d``, a Dagster resource's ``{"replicas": "3"}``): option ``prefix`` +
        field name sets that field of ``bucket`` (a name, or a config to start from).

        A value is read as the field reads a templated value (durations like ``7d``,
        ``true``/``false``, integers); ``metadata`` and ``placement`` are JSON objects. An
        empty value leaves its field alone; options not starting with ``prefix`` are not
        looked at. An unknown ``prefix`` option, or a value that cannot be read, raises a
        ValueError naming the option, so a typo never creates a bucket without its setting."""
        base = bucket if isinstance(bucket, StoreConfig) else cls(bucket)
        settings: dict[str, Any] = {}
        for key, text in options.items():
            if not key.startswith(prefix):
                continue
            name = key[len(prefix) :]
            if name not in SETTING_FIELDS:
                known = [prefix + n for n in STORE_SETTINGS]
                raise ValueError(f"unknown store setting {key!r}; known: {known}")
            if not str(text).strip():
                continue
            try:
                value = _from_text(SETTING_FIELDS[name].metadata, text)
                cls(base.bucket, **{name: value})  # checked alone, so the error names it
            except (TypeError, ValueError) as exc:
                raise ValueError(f"store setting {key!r}: {exc}") from None
            settings[name] = value
        try:
            return cls.build(base, **settings)
        except ValueError as exc:  # settings that exclude each other
            given = [prefix + n for n in settings]
            raise ValueError(f"store settings {given}: {exc}") from None

    @classmethod
    def from_stream_config(cls, bucket: str, config: Mapping[str, Any]) -> StoreConfig:
        """The settings a bucket's stream has now (its ``STREAM.INFO`` config)."""
        return cls(
            bucket=bucket,
            description=config.get("description") or "",
            metadata=user_metadata(config.get("metadata")),
            ttl=_from_nanos(config.get("max_age")),
            max_bytes=int(config.get("max_bytes") or -1),
            storage=config.get("storage") or "file",
            replicas=int(config.get("num_replicas") or 1),
            placement=config.get("placement"),
            compression=config.get("compression", "none") == "s2",
            allow_msg_ttl=bool(config.get("allow_msg_ttl")),
            delete_marker_ttl=_from_nanos(config.get("subject_delete_marker_ttl")),
        )

    def stream_config(self) -> dict[str, Any]:
        """The backing stream's configuration, laid out as ADR-20 says."""
        config: dict[str, Any] = {
            "name": stream_name(self.bucket),
            "subjects": [all_chunks_subject(self.bucket), all_meta_subject(self.bucket)],
            "discard": "new",
            "allow_rollup_hdrs": True,
            "allow_direct": True,
            # a put that fits one atomic batch (ADR-50, server 2.12+) is all-or-nothing:
            # natsobj.aio.atomic_put
            "allow_atomic": True,
        }
        config.update(self._settings_config())
        return config

    def applied_to(self, current: Mapping[str, Any], settings: Iterable[str]) -> dict[str, Any]:
        """``current`` (a stream config as the server sent it, fields this client does not
        know included) with the keys of ``settings`` set from this config: an update
        changes what it names and keeps everything else."""
        mine = self._settings_config()
        config = dict(current)
        for name in settings:
            key = SETTING_FIELDS[name].metadata["stream_key"]
            if key in mine:
                config[key] = mine[key]
            else:
                config.pop(key, None)
        return config

    def _settings_config(self) -> dict[str, Any]:
        """The stream-config keys the settings set; unset optional ones are left out."""
        config: dict[str, Any] = {
            "max_age": int(self.ttl.total_seconds() * _NANOS) if self.ttl else 0,
            "max_bytes": self.max_bytes,
            "storage": self.storage,
            "num_replicas": self.replicas,
            "compression": "s2" if self.compression else "none",
        }
        if self.description:
            config["description"] = self.description
        if self.metadata:
            config["metadata"] = dict(self.metadata)
        if self.placement:
            config["placement"] = self.placement.as_dict()
        if self.allow_msg_ttl:
            # the markers are how watchers see an expiry (natsobj.lifecycle)
            marker = self.delete_marker_ttl or DEFAULT_DELETE_MARKER_TTL
            config["allow_msg_ttl"] = True
            config["subject_delete_marker_ttl"] = int(marker.total_seconds() * _NANOS)
        return config


def _from_text(row: Mapping[str, str], text: str) -> Any:
    """A setting's value from its text form: JSON for the fields that are mappings, the text
    itself for the rest (``__post_init__`` reads it)."""
    example = row.get("json")
    if not example:
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"must be a JSON object such as {example}, not {text!r}")
    return value


def _from_nanos(value: Any) -> timedelta | None:
    nanos = int(value or 0)
    return timedelta(microseconds=nanos / 1000) if nanos else None


def _ttl(value: float | timedelta | None) -> timedelta | None:
    if value is None:
        return None
    ttl = parse_duration(value, what="a store TTL")  # seconds, or 7d / 1h30m from a template
    if ttl < timedelta(0):
        raise ValueError(f"ttl must not be negative, not {value!r}")
    return ttl or None


SETTING_FIELDS = {f.name: f for f in fields(StoreConfig) if f.name != "bucket"}
# The one table of store settings: every face accepts exactly these.
STORE_SETTINGS: tuple[str, ...] = tuple(SETTING_FIELDS)

NATSOBJ_METADATA = "natsobj"
"""The prefix of the keys natsobj itself keeps in a bucket's metadata: its lifecycle rules
(``natsobj.lifecycle``) and its archive's targets (``natsobj_archive``, ...). They are
bookkeeping, not the user's tags: replacing the tags must not drop them."""


def tag_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    """A bucket's tags, the twin of an S3 bucket's tag set: its user metadata
    (``StoreStatus.metadata``) without natsobj's own keys."""
    return {k: v for k, v in metadata.items() if not k.startswith(NATSOBJ_METADATA)}


def users_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    """A bucket's metadata without natsobj's own keys (``NATSOBJ_METADATA``)."""
    return {k: v for k, v in metadata.items() if not k.startswith(NATSOBJ_METADATA)}


def retagged_metadata(current: Mapping[str, str], tags: Mapping[str, str]) -> dict[str, str]:
    """The user metadata a bucket gets when its tags are replaced by ``tags`` (S3's
    ``PutBucketTagging`` replaces the whole set): ``tags``, with natsobj's own keys of
    ``current`` kept as they are. A tag named like one of natsobj's keys is refused
    (ValueError): it would rewrite the bucket's lifecycle rules or archive."""
    reserved = sorted(k for k in tags if k.startswith(NATSOBJ_METADATA))
    if reserved:
        raise ValueError(
            f"metadata keys {reserved} start with {NATSOBJ_METADATA!r}, which natsobj keeps for"
            " the bucket's lifecycle rules and archive; set those through lifecycle rules or"
            " the archive, and name tags otherwise"
        )
    return {**dict(tags), **{k: v for k, v in current.items() if k not in users_metadata(current)}}
