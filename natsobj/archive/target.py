"""The S3-compatible target, behind one small class so any S3 endpoint works through it.

obstore (the Rust ``object_store`` crate) was chosen by measuring against aiobotocore on the
same moto endpoint (docs/archive.md, "Why obstore"): faster multipart uploads, native async,
ranged reads and an S3 SHA-256 checksum on every upload. Everything else in
``natsobj.archive`` sees only this class, so another client library would replace this module
alone.

Credentials follow the AWS chain obstore reads (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``,
``AWS_REGION``...), a named profile through boto3 when it is installed, or explicit options.
Secrets are never part of ``repr`` or of an error message.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

from natsobj.archive.native_exit import let_native_threads_leave_python
from natsobj.errors import NatsObjError

if TYPE_CHECKING:
    from obstore.store import ClientConfig, S3Config

MULTIPART_PART_SIZE = 8 * 1024 * 1024
MULTIPART_CONCURRENCY = 2  # parts in flight: bounds memory to a few parts per large object
STREAM_CHUNK = 1024 * 1024

atexit.register(let_native_threads_leave_python)  # obstore's threads must leave Python first


class ArchiveTargetError(NatsObjError):
    hint = (
        "Check the S3 endpoint is reachable and the credentials (AWS_* environment, profile "
        "or explicit options) may read and write the bucket."
    )


@dataclass
class RequestCounts:
    """Requests this process sent, by kind: what the packing saves is counted, not guessed."""

    puts: int = 0
    multipart_puts: int = 0
    gets: int = 0
    lists: int = 0


@dataclass
class S3Options:
    """Explicit settings; anything left None comes from the AWS environment chain."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    profile: str | None = None
    checksum: bool = True
    retry_seconds: float = 30.0

    def __repr__(self) -> str:
        secret = "***" if self.secret_access_key else None
        return (
            f"S3Options(endpoint={self.endpoint!r}, region={self.region!r}, "
            f"profile={self.profile!r}, secret_access_key={secret!r})"
        )


URL_SETTINGS = ("endpoint", "region")  # what a target URL's query may name (never secrets)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` -> (bucket, prefix without slashes at either end)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("s3", "s3a") or not parsed.netloc:
        raise ValueError(f"archive target must look like s3://bucket/prefix, not {url!r}")
    return parsed.netloc, parsed.path.strip("/")


def url_settings(url: str) -> dict[str, Any]:
    """``s3://bucket/prefix?endpoint=http://host:9000&region=eu-west-1`` -> its settings.

    Targets in different places (two regions, two clouds) need their own endpoint; carried
    in the URL, it travels with every record that names the target, so a reader in another
    process (a Spark executor, an Airflow worker) finds the bytes with the URL alone."""
    query = parse_qs(urlparse(url).query, keep_blank_values=True)
    unknown = sorted(set(query) - set(URL_SETTINGS))
    if unknown:
        where = urlparse(url)._replace(query="").geturl()  # the query may hold a secret
        raise ValueError(
            f"archive target {where!r}: unknown setting {', '.join(unknown)} "
            f"(a target URL may set {' and '.join(URL_SETTINGS)}; credentials come from the "
            "AWS environment)"
        )
    return {name: values[-1] for name, values in query.items()}


class ArchiveTarget:
    """One ``s3://bucket/prefix``; keys passed in are relative to the prefix."""

    def __init__(self, url: str, options: S3Options | None = None) -> None:
        from obstore.store import S3Store

        self.url = url.rstrip("/")
        self.bucket, self.prefix = split_url(self.url)
        self.options = replace(options or S3Options(), **url_settings(self.url))
        self.counts = RequestCounts()
        opts = self.options
        config: S3Config = {}
        if opts.endpoint:
            config["endpoint"] = opts.endpoint
        if opts.region:
            config["region"] = opts.region
        if opts.access_key_id:
            config["access_key_id"] = opts.access_key_id
        if opts.secret_access_key:
            config["secret_access_key"] = opts.secret_access_key
        if opts.session_token:
            config["session_token"] = opts.session_token
        if opts.checksum:
            config["checksum_algorithm"] = "sha256"
        endpoint = (
            opts.endpoint
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
        )
        client_options: ClientConfig = {"timeout": timedelta(seconds=120)}
        if endpoint and endpoint.startswith("http://"):
            client_options["allow_http"] = True
        if endpoint and "endpoint" not in config:
            config["endpoint"] = endpoint
        credential_provider = None
        profile = opts.profile or (
            os.environ.get("AWS_PROFILE") if not opts.access_key_id else None
        )
        if profile and not os.environ.get("AWS_ACCESS_KEY_ID"):
            credential_provider = _profile_credentials(profile)
        self._store = S3Store(
            self.bucket,
            prefix=self.prefix or None,
            config=config,
            client_options=client_options,
            retry_config={
                "max_retries": 10,
                "retry_timeout": timedelta(seconds=opts.retry_seconds),
                "backoff": {
                    "init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=5),
                    "base": 2,
                },
            },
            credential_provider=credential_provider,
        )

    def __repr__(self) -> str:
        return f"ArchiveTarget({self.url!r}, {self.options!r})"

    def _error(self, action: str, key: str, exc: Exception) -> ArchiveTargetError:
        return ArchiveTargetError(f"{action} {self.url}/{key} failed: {_first_line(exc)}")

    async def put_bytes(self, key: str, data: bytes) -> None:
        import obstore

        try:
            await obstore.put_async(self._store, key, data, use_multipart=False)
        except Exception as exc:
            raise self._error("PUT", key, exc) from exc
        self.counts.puts += 1

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> None:
        """A multipart upload of ``MULTIPART_PART_SIZE`` parts, a few in memory at a time.
        An exception from ``chunks`` (a digest mismatch, say) aborts the upload, so the key
        never appears half-written. The chunks are pushed into obstore's writer rather than
        handed over as an async iterable: obstore holding a Python async generator made the
        interpreter abort at exit after large uploads."""
        import obstore

        try:
            async with obstore.open_writer_async(
                self._store,
                key,
                buffer_size=MULTIPART_PART_SIZE,
                max_concurrency=MULTIPART_CONCURRENCY,
            ) as writer:
                part = bytearray()
                async for chunk in chunks:
                    part += chunk
                    if len(part) >= MULTIPART_PART_SIZE:
                        await writer.write(part)
                        part = bytearray()
                if part:
                    await writer.write(part)
        except NatsObjError:
            raise
        except Exception as exc:
            raise self._error("multipart PUT", key, exc) from exc
        self.counts.multipart_puts += 1

    async def get_bytes(self, key: str) -> bytes | None:
        """The whole object, or None when it does not exist."""
        import obstore

        try:
            result = await obstore.get_async(self._store, key)
            data = bytes(await result.bytes_async())
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._error("GET", key, exc) from exc
        self.counts.gets += 1
        return data

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of ``key`` (end exclusive, as the core's ``get_range`` and
        fsspec count): one ranged GET."""
        import obstore

        if end <= start:
            return b""
        try:
            data = bytes(await obstore.get_range_async(self._store, key, start=start, end=end))
        except Exception as exc:
            raise self._error("ranged GET", key, exc) from exc
        self.counts.gets += 1
        return data

    async def stream(self, key: str, start: int, end: int) -> AsyncGenerator[bytes]:
        """Bytes ``[start, end)`` of ``key`` in pieces of about a MiB: one ranged GET,
        streamed."""
        import obstore

        if end <= start:
            return
        try:
            result = await obstore.get_async(self._store, key, options={"range": (start, end)})
            self.counts.gets += 1
            async for piece in result.stream(min_chunk_size=STREAM_CHUNK):
                yield bytes(piece)
        except Exception as exc:
            raise self._error("GET", key, exc) from exc

    async def list(self, prefix: str) -> list[str]:
        """Keys (relative to the target's prefix) under ``prefix``, sorted."""
        import obstore

        keys: list[str] = []
        try:
            async for batch in obstore.list(self._store, prefix=prefix):
                keys.extend(str(meta["path"]) for meta in batch)
        except Exception as exc:
            raise self._error("LIST", prefix, exc) from exc
        self.counts.lists += 1
        return sorted(keys)

    async def delete(self, key: str) -> None:
        import obstore

        try:
            await obstore.delete_async(self._store, key)
        except Exception as exc:
            raise self._error("DELETE", key, exc) from exc


def _profile_credentials(profile: str) -> Any:
    """A named AWS profile needs boto3's config-file reader; obstore has none of its own."""
    try:
        import boto3
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError as exc:
        raise ArchiveTargetError(
            f"AWS profile {profile!r} needs boto3",
            hint="pip install boto3, or set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY instead.",
        ) from exc
    return Boto3CredentialProvider(boto3.Session(profile_name=profile))


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
