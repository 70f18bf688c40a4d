"""Object-to-object copy, streamed chunk by chunk, for every face that copies (the fsspec
filesystem's ``cp_file``, ``natsobj cp``, Airflow's copy operators)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping

from natsobj.aio.store import ObjectStore
from natsobj.model import ObjectInfo, kept_chunk_size


def copied_by_prefix(info: ObjectInfo) -> bool:
    """Whether a copy of everything below a prefix copies this listed object: not a bucket
    link (it has no object to follow; an object link is followed to its data, or refused
    as ``copy_object`` refuses it)."""
    return not (info.link and info.link.is_bucket_link)


async def copy_object(
    source: ObjectStore,
    name: str,
    target: ObjectStore,
    target_name: str | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    allow_missing_digest: bool = False,
    follow_links: bool = False,
    check: Callable[[ObjectInfo], None] | None = None,
    headers: Mapping[str, list[str]] | None = None,
    metadata: dict[str, str] | None = None,
    version: str | None = None,
) -> ObjectInfo:
    """Copy ``name`` (following a link) to ``target_name`` (default: the same name) in
    ``target``, which may be another bucket, keeping description, headers, metadata and the
    chunk size (when sane: ``kept_chunk_size``). The data is checked against its digest as it
    streams; a failed read leaves the target's previous version in place, as any failed put
    does.

    A source record without a digest is refused (MissingDigest) unless
    ``allow_missing_digest``, as by every read: the copy gets a digest of the bytes read, so
    copying would otherwise vouch for data nothing checked. A link into another bucket is
    LinkError unless ``follow_links``: a copy made for someone else (an operator, the gateway)
    would otherwise copy out of a bucket the link's writer cannot read (``natsobj.aio.links``).

    ``check`` sees the very version about to be copied before a byte is written (how S3's
    ``x-amz-copy-source-if-*`` conditions judge it without a race); raising there stops the
    copy. ``headers`` and ``metadata`` replace the source's instead of keeping them.
    ``version``: copy that version of ``name`` (``ObjectStore.versions``); copying one over
    the current version is how a version is restored."""
    async with source.get(
        name,
        allow_missing_digest=allow_missing_digest,
        follow_links=follow_links,
        version=version,
    ) as reader:
        info = reader.info
        if check is not None:
            check(info)

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in reader:
                if progress is not None:
                    progress(len(chunk))
                yield chunk

        return await target.put(
            target_name or name,
            chunks(),
            description=info.description or None,
            headers=info.headers if headers is None else headers,
            metadata=info.metadata if metadata is None else metadata,
            chunk_size=kept_chunk_size(info.chunk_size),
        )


async def restore(store: ObjectStore, name: str, version: str) -> ObjectInfo:
    """Make ``version`` of ``name`` its current version again: S3 users restore by copying a
    version over its key, and so does this (``copy_object``), so the version current until now
    is kept as a version too where the bucket keeps versions. A delete marker has no bytes to
    restore (ObjectNotFound): removing it by its id undeletes the name instead."""
    return await copy_object(store, name, store, name, version=version)
