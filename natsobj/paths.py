"""Object names seen as paths: the store is flat, but '/'-separated prefixes read as
directories. The CLI's listings, the fsspec filesystem and the Spark data source all use this
one view, so "a/b" means the same directory everywhere."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from natsobj.model import ObjectInfo

SEP = "/"
SCHEME = "nats://"


@dataclass(frozen=True)
class NatsPath:
    """``nats://[conn_id@]bucket/key``: the bucket, the object name or prefix inside it, and
    the Airflow connection id some callers put in front of the bucket (not a server)."""

    bucket: str
    key: str
    conn_id: str | None = None

    @property
    def path(self) -> str:
        """``bucket/key`` without the scheme: what the fsspec filesystem works with."""
        return (self.bucket + SEP + self.key).strip(SEP)


def is_nats_url(text: str) -> bool:
    """Whether ``text`` is a ``nats://`` URL rather than a local path or a bare name."""
    return text.startswith(SCHEME)


def parse_nats_url(url: str) -> NatsPath:
    """Split ``nats://[conn_id@]bucket/key`` (the scheme is optional): the one parser of these
    URLs, used by the fsspec filesystem (and so Airflow's ObjectStoragePath), the Spark source,
    the CLI and Airflow's asset URIs.

    The key is everything after the bucket's ``/``, as written: a trailing ``/`` (a prefix
    "directory") is kept, and ``?`` or ``#`` are part of the name, never a query or fragment;
    an Airflow connection id before the bucket ends at the last ``@`` (buckets have none)."""
    text = url.removeprefix(SCHEME).lstrip(SEP)
    host, _, key = text.partition(SEP)
    conn_id, _, bucket = host.rpartition("@")
    return NatsPath(bucket=bucket, key=key, conn_id=conn_id or None)


def nats_url(bucket: str, key: str = "") -> str:
    """``nats://bucket/key``, the spelling every face prints and records (assets, lineage)."""
    return f"{SCHEME}{bucket}{SEP}{key.lstrip(SEP)}"


def as_dir(prefix: str | None) -> str:
    """'reports', 'reports/' and 'reports//' all mean the directory 'reports/'; '' is the top."""
    if not prefix or prefix.strip(SEP) in ("", "."):
        return ""
    return prefix.rstrip(SEP) + SEP


def listing_prefix(prefix: str | None) -> str:
    """The string prefix to list by (``ObjectStore.list(prefix=...)``) to find both the object
    named ``prefix`` and everything in the directory ``as_dir(prefix)``."""
    directory = as_dir(prefix)
    if not directory or (prefix or "").startswith(directory):
        return directory
    return prefix or ""  # "a/b": the object "a/b" and the directory "a/b/"


def under(infos: Iterable[ObjectInfo], prefix: str | None) -> list[ObjectInfo]:
    """The objects anywhere below the directory ``prefix``."""
    directory = as_dir(prefix)
    return [i for i in infos if i.name.startswith(directory)]


def split_level(
    infos: Iterable[ObjectInfo], prefix: str | None
) -> tuple[dict[str, list[ObjectInfo]], list[ObjectInfo]]:
    """One directory level: sub-directories (name ending in '/') with the objects below each,
    and the objects directly inside ``prefix``."""
    directory = as_dir(prefix)
    dirs: dict[str, list[ObjectInfo]] = {}
    objects: list[ObjectInfo] = []
    for info in under(infos, directory):
        head, sep, _ = info.name[len(directory) :].partition(SEP)
        if sep and head:
            dirs.setdefault(directory + head + SEP, []).append(info)
        elif head:
            objects.append(info)
    return dirs, objects


def common_prefix(name: str, prefix: str, delimiter: str | None) -> str | None:
    """S3's ``CommonPrefixes`` rule for a name listed under the string ``prefix`` with a
    ``delimiter``: the prefix it rolls up into (``prefix`` and the rest of the name up to and
    including the first ``delimiter`` after it), or None when it is listed as itself. Unlike
    ``split_level`` the prefix is a plain string and the delimiter any string, as on S3, so
    ``prefix="logs/2024-"`` with ``delimiter="-"`` groups ``logs/2024-01-03`` under
    ``logs/2024-01-``."""
    if not delimiter:
        return None
    cut = name.find(delimiter, len(prefix))
    return None if cut == -1 else name[: cut + len(delimiter)]
