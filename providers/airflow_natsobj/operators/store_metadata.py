"""Read, set and clear a bucket's metadata as Airflow tasks: the twins of the Amazon provider's
``S3GetBucketTaggingOperator``, ``S3PutBucketTaggingOperator`` and
``S3DeleteBucketTaggingOperator``, with its ``key``/``value`` parameters.

A NATS object store's metadata (``StoreConfig.metadata``, string keys and values on the
bucket's stream) is what a bucket's tag set is on S3, less two kinds of keys that are not the
user's tags. The server's own (its version, under ``_nats``: ``natsobj.model.user_metadata``)
are left out of the store's status and never sent back, so the server keeps them. natsobj's
own (the bucket's lifecycle rules and archive targets, under ``natsobj``:
``natsobj.store_config.tag_metadata``) are not shown and are kept through every put and
delete; a tag named like them is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_natsobj.operators.object_store import NatsBaseOperator
from airflow_natsobj.wording import airflow_words
from natsobj.errors import in_words_of
from natsobj.store_config import tag_metadata

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook


def _retag(hook: NatsObjectStoreHook, bucket: str, tags: Mapping[str, str]) -> dict[str, str]:
    """Replace the bucket's tags (the core keeps natsobj's own keys); the tags it has afterwards."""
    updated = hook.update_store(bucket, metadata=dict(tags))
    return tag_metadata(updated.status().metadata)


class NatsGetObjectStoreMetadataOperator(NatsBaseOperator):
    """The bucket's metadata (its tags) as a dict (``{}`` when it has none), returned to
    XCom. Amazon's operator returns S3's ``[{"Key": ..., "Value": ...}]`` list; a dict is the
    natural form of string keys and values, and what the put operator takes."""

    template_fields: Sequence[str] = ("bucket",)

    def __init__(self, *, bucket: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, str]:
        with self.hook() as hook:
            metadata = tag_metadata(hook.get_store(self.bucket).status().metadata)
        self.log.info("Bucket %s has %d metadata key(s)", self.bucket, len(metadata))
        return metadata


class NatsPutObjectStoreMetadataOperator(NatsBaseOperator):
    """Replace the bucket's metadata, as S3's ``PutBucketTagging`` replaces the whole tag set:
    the new metadata is ``metadata`` (a dict) with the ``key``/``value`` pair added, as
    Amazon's operator adds its pair to ``tag_set``; keys left out are removed. At least one
    of the two is needed, and ``key`` and ``value`` come together. natsobj's own keys (the
    bucket's lifecycle rules and archive targets) are kept. Returns the metadata the bucket
    has afterwards."""

    template_fields: Sequence[str] = ("bucket", "key", "value", "metadata")
    template_fields_renderers = {"metadata": "json"}

    def __init__(
        self,
        *,
        bucket: str,
        key: str | None = None,
        value: str | None = None,
        metadata: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.key = key
        self.value = value
        self.metadata = metadata
        # a call that can never work fails when the DAG is parsed, not when it runs
        if (key is None) != (value is None):
            raise ValueError(
                f"task {self.task_id!r}: key and value come together (key={key!r}, value={value!r})"
            )
        if key is None and metadata is None:
            raise ValueError(
                f"task {self.task_id!r}: give metadata= (a dict), or key= and value=, or both"
            )

    def _new_metadata(self) -> dict[str, str]:
        """``metadata`` as rendered, with the pair added."""
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise TypeError(
                f"task {self.task_id!r}: metadata must be a dict of strings, not {self.metadata!r}"
            )
        new = dict(self.metadata or {})
        if self.key is not None and self.value is not None:
            new[self.key] = self.value
        return new

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, str]:
        new = self._new_metadata()
        with self.hook() as hook:
            metadata = _retag(hook, self.bucket, new)
        self.log.info("Bucket %s's metadata is now %s", self.bucket, metadata)
        return metadata


class NatsDeleteObjectStoreMetadataOperator(NatsBaseOperator):
    """Remove all of the bucket's metadata (its tags: the server's and natsobj's own keys
    stay); returns nothing, as Amazon's operator."""

    template_fields: Sequence[str] = ("bucket",)

    def __init__(self, *, bucket: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> None:
        with self.hook() as hook:
            _retag(hook, self.bucket, {})
        self.log.info("Removed bucket %s's metadata", self.bucket)
