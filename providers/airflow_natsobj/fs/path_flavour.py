"""``nats://`` paths of Airflow 3.1's ``ObjectStoragePath`` parsed as ``natsobj.fs`` does.

Airflow 3.1's ObjectStoragePath is a universal_pathlib CloudPath that takes its parser from its
protocol (from 3.2 it wraps a ``UPath``, which finds ``natsobj.upath.NatsPath``). universal_pathlib
looks a protocol up once per process: in fsspec's imported filesystem classes, then in its own
registry of flavours, else a generic flavour whose root marker cuts the first letter off every
name and puts a ``/`` before the bucket. ``register()`` (the package calls it on import) puts
``nats`` in that registry, answered by ``natsobj.fs.NatsObjectFileSystem`` itself, imported on
the first path parsed (provider discovery imports this package and must not load the client),
with the bucket as anchor as for ``s3://`` (``natsobj.upath``).
"""

from __future__ import annotations

from typing import Any


class _NatsFlavourSource:
    """What universal_pathlib asks of a flavour source, asked of NatsObjectFileSystem."""

    protocol = "nats"
    # NatsObjectFileSystem's (tests/airflow/test_object_storage.py compares them)
    root_marker = ""
    sep = "/"

    @staticmethod
    def _filesystem() -> Any:
        from natsobj.fs import NatsObjectFileSystem

        return NatsObjectFileSystem

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        return cls._filesystem()._strip_protocol(path)

    @classmethod
    def _get_kwargs_from_urls(cls, path: Any) -> dict[str, Any]:
        return cls._filesystem()._get_kwargs_from_urls(path)

    @classmethod
    def _parent(cls, path: Any) -> str:
        return cls._filesystem()._parent(path)


def register() -> None:
    """Register ``nats`` with universal_pathlib unless it already knows the protocol."""
    from upath._flavour import WrappedFileSystemFlavour
    from upath._flavour_sources import flavour_registry

    if "nats" in flavour_registry:
        return
    flavour_registry["nats"] = _NatsFlavourSource  # type: ignore[assignment]
    config = WrappedFileSystemFlavour.protocol_config
    config["netloc_is_anchor"].add("nats")
    config["supports_empty_parts"].add("nats")
    # a nats:// path parsed before this import keeps the generic flavour looked up for it
    WrappedFileSystemFlavour.from_protocol.cache_clear()
