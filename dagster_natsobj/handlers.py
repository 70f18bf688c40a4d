"""One handler per artifact format; the annotation or the value picks it.

Optional libraries (pandas, polars, pyarrow, pyspark) are never imported just to test a type:
a value or annotation of one of their classes means the module is already loaded. Everything that
could be large passes through a temporary file, so memory stays bounded by the value itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import pickle
import sys
import tempfile
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dagster import TableColumn, TableSchema

from dagster_natsobj.errors import TooDeep, UntrustedPickle
from natsobj import ConnectionSettings, ObjectInfo
from natsobj.fs_versions import VersionedPath
from natsobj.local.embedded_rule import resolve_server
from natsobj.operation_options import Face, parquet_codec, resolve
from natsobj.orchestration.json_values import is_json_native, read_json, write_json

FORMAT_KEY = "natsobj.format"
TYPE_KEY = "natsobj.type"
SIGNATURE_KEY = "natsobj.hmac"  # "hmac-sha256=<base64url>" of the pickle's exact bytes
_SIGNATURE_SCHEME = "hmac-sha256="
_MAC_BLOCK = 1 << 20
CONTENT_TYPE = "Content-Type"  # in the metadata passed to save(): becomes the header
# In the metadata passed to save(): the object's time to live as the IO manager parsed it (a
# timedelta; zero: never), handed to put's ``ttl`` as it is (so a custom handler that builds
# its put with ``object_meta`` honours the IO manager's ttl, and nothing parses it twice).
TTL = "natsobj.ttl"


@dataclass(frozen=True)
class ParquetWrite:
    """How the table handlers write Parquet: the options table's ``write_parquet`` row
    (``natsobj.operation_options``), as the IO manager resolved it. By default the same file
    layout as the Spark data source writes, whatever each library's own default is."""

    compression: str
    dictionary: bool
    row_group_rows: int

    @classmethod
    def default(cls) -> ParquetWrite:
        """The table's Dagster defaults."""
        return cls(**resolve(Face.DAGSTER, "write_parquet", {}))

    def pyarrow_options(self) -> dict[str, Any]:
        """The keywords of ``pyarrow.parquet.write_table`` that say the same."""
        return {
            "compression": parquet_codec(self.compression),
            "use_dictionary": self.dictionary,
            "row_group_size": self.row_group_rows,
        }


@dataclass
class Target:
    """Where a value goes or comes from; ``store`` is a blocking natsobj ObjectStore."""

    store: Any
    settings: ConnectionSettings
    bucket: str
    name: str
    # The IO manager's pickle signing key: pickles are signed with it and verified against it.
    pickle_key: bytes | None = field(default=None, repr=False, compare=False)
    # The IO manager's allow_missing_digest: loads pass it to every get, so an object whose
    # record has no digest is refused unless the user opted out.
    allow_missing_digest: bool = False
    # The columns a downstream input asks for (input metadata {"columns": [...]}): table
    # handlers then fetch only those column chunks through ranged reads; None loads it all.
    columns: tuple[str, ...] | None = None
    # How table handlers write Parquet (the IO manager's write_parquet options).
    parquet: ParquetWrite = field(default_factory=ParquetWrite.default)
    # The version a load reads (an input's pin, ``dagster_natsobj.versions``); None: the
    # current one. Every read of a load passes it on, so a pinned load never mixes versions.
    version: str | None = None

    @property
    def uri(self) -> str:
        return f"nats://{self.bucket}/{self.name}"

    def read_keywords(self) -> dict[str, Any]:
        """The keywords of every store read of a load: the digest rule and the version."""
        return {"allow_missing_digest": self.allow_missing_digest, "version": self.version}


@dataclass
class Stored:
    """What a save produced, for the output metadata."""

    info: ObjectInfo
    row_count: int | None = None
    schema: TableSchema | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def loaded_class(module: str, attr: str) -> type | None:
    """The class if its module is already imported, else None (never imports)."""
    mod = sys.modules.get(module)
    cls = getattr(mod, attr, None) if mod is not None else None
    return cls if isinstance(cls, type) else None


class Handler:
    """How one kind of value is stored and loaded. Subclass it (``FileHandler`` when the value
    goes through a file) and pass an instance to ``dagster_natsobj.register_handler`` to store
    your own types; ``type_name`` is recorded on each object, so loads find the handler again."""

    format: str = ""
    type_name: str = ""
    content_type: str = "application/octet-stream"
    # Whether ``load`` reads ``Target.version`` (through ``Target.read_keywords``): an input pinned
    # to a version is refused by a handler that would read the current one instead.
    reads_versions: bool = False

    def classes(self) -> tuple[type, ...]:
        raise NotImplementedError

    def accepts_type(self, tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, self.classes())

    def accepts_value(self, value: Any) -> bool:
        return isinstance(value, self.classes())

    def save(self, target: Target, value: Any, metadata: Mapping[str, Any]) -> Stored:
        """Store ``value``; ``metadata`` may carry "Content-Type" to override the default and
        ``TTL`` for an object that expires; ``object_meta`` turns both into put's keywords."""
        raise NotImplementedError

    def load(self, target: Target) -> Any:
        raise NotImplementedError

    def object_meta(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for ``put``: the format travels with the object, and so does the
        expiry the IO manager asked for (``ttl``, only when it asked, already parsed)."""
        meta = dict(metadata)
        content_type = meta.pop(CONTENT_TYPE, None) or self.content_type
        ttl = meta.pop(TTL, None)
        kwargs: dict[str, Any] = {
            "metadata": {**meta, FORMAT_KEY: self.format, TYPE_KEY: self.type_name},
            "headers": {"Content-Type": [content_type]},
        }
        if ttl is not None:
            kwargs["ttl"] = ttl
        return kwargs


class BytesHandler(Handler):
    format = "bytes"
    type_name = "bytes"
    reads_versions = True

    def classes(self) -> tuple[type, ...]:
        return (bytes, bytearray, memoryview)

    def save(self, target: Target, value: Any, metadata: Mapping[str, Any]) -> Stored:
        info = target.store.put(target.name, bytes(value), **self.object_meta(metadata))
        return Stored(info)

    def load(self, target: Target) -> bytes:
        return target.store.get_bytes(target.name, **target.read_keywords())


class TextHandler(Handler):
    format = "text"
    type_name = "str"
    content_type = "text/plain; charset=utf-8"
    reads_versions = True

    def classes(self) -> tuple[type, ...]:
        return (str,)

    def save(self, target: Target, value: Any, metadata: Mapping[str, Any]) -> Stored:
        info = target.store.put(target.name, value.encode("utf-8"), **self.object_meta(metadata))
        return Stored(info)

    def load(self, target: Target) -> str:
        data = target.store.get_bytes(target.name, **target.read_keywords())
        return data.decode("utf-8")


class FileHandler(Handler):
    """Serialize to a temporary file and stream it up; download to one and parse it (the
    version ``Target.version`` names, so a subclass implementing ``read_file`` reads versions)."""

    reads_versions = True

    def save(self, target: Target, value: Any, metadata: Mapping[str, Any]) -> Stored:
        with tempfile.TemporaryDirectory(prefix="natsobj-dagster-") as tmp:
            path = Path(tmp) / "value"
            row_count, schema = self.write(target, value, path)
            info = target.store.put(target.name, path, **self.object_meta(metadata))
            return Stored(info, row_count, schema)

    def load(self, target: Target) -> Any:
        with tempfile.TemporaryDirectory(prefix="natsobj-dagster-") as tmp:
            path = Path(tmp) / "value"
            target.store.get_file(target.name, path, **target.read_keywords())
            return self.read_file(path)

    def write(
        self, target: Target, value: Any, path: Path
    ) -> tuple[int | None, TableSchema | None]:
        """Write ``value`` to ``path`` for ``target`` (whose settings a format may follow)."""
        return self.write_file(value, path)

    def write_file(self, value: Any, path: Path) -> tuple[int | None, TableSchema | None]:
        """Write ``value`` to ``path``; return its row count and schema when it is a table."""
        raise NotImplementedError

    def read_file(self, path: Path) -> Any:
        raise NotImplementedError


class ParquetHandler(FileHandler):
    """A table stored as Parquet. A load that names its columns (``Target.columns``) reads the
    footer and those columns' chunks through a ranged reader instead of downloading the whole
    object; a ranged read cannot be checked against the object's SHA-256 (that covers every
    byte), a whole load is. Every table is written with the target's ``ParquetWrite``."""

    format = "parquet"
    content_type = "application/vnd.apache.parquet"

    def write(
        self, target: Target, value: Any, path: Path
    ) -> tuple[int | None, TableSchema | None]:
        return self.write_parquet(value, path, target.parquet)

    def write_parquet(
        self, value: Any, path: Path, settings: ParquetWrite
    ) -> tuple[int | None, TableSchema | None]:
        """Write the table ``value`` to ``path`` as ``settings`` say; its row count and schema."""
        raise NotImplementedError

    def load(self, target: Target) -> Any:
        if target.columns is None:
            return super().load(target)
        with target.store.open_range(target.name, **target.read_keywords()) as source:
            return self.read_columns(source, list(target.columns))

    def read_columns(self, source: Any, columns: list[str]) -> Any:
        """Only ``columns`` of the Parquet file ``source`` (a seekable binary file)."""
        raise NotImplementedError


class ArrowHandler(ParquetHandler):
    type_name = "pyarrow.Table"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("pyarrow", "Table")
        return (cls,) if cls else ()

    def write_parquet(
        self, value: Any, path: Path, settings: ParquetWrite
    ) -> tuple[int | None, TableSchema | None]:
        import pyarrow.parquet as pq

        pq.write_table(value, path, **settings.pyarrow_options())
        return value.num_rows, arrow_table_schema(value.schema)

    def read_file(self, path: Path) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(path, memory_map=False)

    def read_columns(self, source: Any, columns: list[str]) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(source, columns=columns)


class PandasHandler(ParquetHandler):
    type_name = "pandas.DataFrame"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("pandas", "DataFrame")
        return (cls,) if cls else ()

    def write_parquet(
        self, value: Any, path: Path, settings: ParquetWrite
    ) -> tuple[int | None, TableSchema | None]:
        value.to_parquet(path, engine="pyarrow", **settings.pyarrow_options())
        schema = TableSchema(
            columns=[TableColumn(name=str(c), type=str(t)) for c, t in value.dtypes.items()]
        )
        return len(value), schema

    def read_file(self, path: Path) -> Any:
        import pandas as pd

        return pd.read_parquet(path, engine="pyarrow")

    def read_columns(self, source: Any, columns: list[str]) -> Any:
        import pandas as pd

        return pd.read_parquet(source, engine="pyarrow", columns=columns)


class PolarsHandler(ParquetHandler):
    type_name = "polars.DataFrame"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("polars", "DataFrame")
        return (cls,) if cls else ()

    def write_parquet(
        self, value: Any, path: Path, settings: ParquetWrite
    ) -> tuple[int | None, TableSchema | None]:
        # polars' own writer cannot turn dictionary encoding off: pyarrow's can
        options = settings.pyarrow_options()
        value.write_parquet(
            path,
            use_pyarrow=True,
            compression=options.pop("compression") or "uncompressed",
            row_group_size=options.pop("row_group_size"),
            pyarrow_options=options,
        )
        schema = TableSchema(
            columns=[TableColumn(name=name, type=str(t)) for name, t in value.schema.items()]
        )
        return value.height, schema

    def read_file(self, path: Path) -> Any:
        import polars as pl

        return pl.read_parquet(path)

    def read_columns(self, source: Any, columns: list[str]) -> Any:
        import polars as pl

        return pl.read_parquet(source, columns=columns, use_pyarrow=True)


class PolarsLazyHandler(ParquetHandler):
    """A polars LazyFrame: its query is sunk into the Parquet file by polars' streaming writer
    (the frame is never collected whole) and loaded as a LazyFrame scanning the object through
    the ``nats://`` filesystem, as ``natsobj.polars.scan_parquet`` does, so the reading
    query's projection and predicate decide which column chunks and row groups are fetched,
    when it is collected. The frame holds no credential: its filesystem pickles as a token of
    this process (``dagster_natsobj.scan_connection``). polars' writer chooses dictionary
    encoding per column itself:
    ``dictionary`` does not apply."""

    type_name = "polars.LazyFrame"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("polars", "LazyFrame")
        return (cls,) if cls else ()

    def write_parquet(
        self, value: Any, path: Path, settings: ParquetWrite
    ) -> tuple[int | None, TableSchema | None]:
        import pyarrow.parquet as pq

        value.sink_parquet(
            path,
            compression=parquet_codec(settings.compression) or "uncompressed",
            row_group_size=settings.row_group_rows,
        )
        schema = TableSchema(
            columns=[
                TableColumn(name=name, type=str(t)) for name, t in value.collect_schema().items()
            ]
        )
        return pq.read_metadata(path).num_rows, schema

    def load(self, target: Target) -> Any:
        import polars as pl
        import pyarrow.dataset as ds

        from dagster_natsobj.scan_connection import scan_filesystem

        # a missing object is ObjectNotFound here, as for every other input (the IO manager's
        # allow_missing_partitions), not the scan's FileNotFoundError
        target.store.get_info(target.name, version=target.version)
        settings = asdict(resolve_server(target.settings))
        fs = scan_filesystem(
            {key: value for key, value in settings.items() if value is not None}
            | {"allow_missing_digest": target.allow_missing_digest}
            | ({} if target.version is None else {"version_aware": True})
        )
        # natsobj.polars.scan_parquet's scan of one object (a peer face, not importable here);
        # a pinned version is named as s3fs names one, for the version-aware filesystem
        path = VersionedPath(target.bucket, target.name, target.version).shown
        dataset = ds.dataset(path, filesystem=fs, format="parquet")
        frame = pl.scan_pyarrow_dataset(dataset)
        return frame if target.columns is None else frame.select(list(target.columns))


class JsonHandler(FileHandler):
    """Values JSON holds exactly (``natsobj.orchestration.json_values``: dicts with ``str`` keys,
    lists, numbers, booleans, None and nestings of them) stored as JSON rather than pickled. JSON
    runs no code when read, so an untyped input loads it on the object's word, with no signing key;
    any other value (a tuple, an ``int`` key, NaN...) stays a pickle rather than coming back
    changed. Chosen by the value alone: an annotation such as ``dict`` cannot say whether the
    value will fit, so it lets the value choose (``registry.handler_for_output``)."""

    format = "json"
    type_name = "json"
    content_type = "application/json"

    def classes(self) -> tuple[type, ...]:
        return (dict, list, int, float, bool, type(None))

    def accepts_type(self, tp: Any) -> bool:
        return False

    def accepts_value(self, value: Any) -> bool:
        return is_json_native(value)

    def write_file(self, value: Any, path: Path) -> tuple[int | None, TableSchema | None]:
        write_json(value, path)
        return None, None

    def read_file(self, path: Path) -> Any:
        return read_json(path)


class PickleHandler(FileHandler):
    """The fallback for any other Python object.

    Unpickling runs code chosen by whoever wrote the bytes, so the IO manager asks for a pickle
    load only when the input's annotation or its own configuration does, never because an
    object says it is a pickle. With a signing key, a pickle is stored with an HMAC of its
    exact bytes and only a pickle whose HMAC verifies is unpickled.

    An input annotated with a type only pickle holds (``dict``, ``list``...) is loaded here,
    and its upstream may have been stored as JSON (a JSON-native value): the version
    downloaded says which, and JSON is read as JSON, which needs no signature.
    """

    format = "pickle"
    type_name = "object"
    content_type = "application/x-python-pickle"

    def classes(self) -> tuple[type, ...]:
        return (object,)

    def save(self, target: Target, value: Any, metadata: Mapping[str, Any]) -> Stored:
        with tempfile.TemporaryDirectory(prefix="natsobj-dagster-") as tmp:
            path = Path(tmp) / "value"
            self.write_file(value, path)
            meta = dict(metadata)
            if target.pickle_key is not None:
                meta[SIGNATURE_KEY] = _SIGNATURE_SCHEME + _mac_of(path, target.pickle_key)
            info = target.store.put(target.name, path, **self.object_meta(meta))
            return Stored(info)

    def load(self, target: Target) -> Any:
        with tempfile.TemporaryDirectory(prefix="natsobj-dagster-") as tmp:
            path = Path(tmp) / "value"
            # the version the MAC must match
            info = target.store.get_file(target.name, path, **target.read_keywords())
            if info.metadata.get(TYPE_KEY) == JsonHandler.type_name:
                return read_json(path)
            if target.pickle_key is not None:
                _verify_signature(target, info, path, target.pickle_key)
            return self.read_file(path)

    def write_file(self, value: Any, path: Path) -> tuple[int | None, TableSchema | None]:
        with path.open("wb") as f:
            try:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            except RecursionError:
                raise TooDeep("the value nests deeper than pickle recurses") from None
        return None, None

    def read_file(self, path: Path) -> Any:
        with path.open("rb") as f:
            try:
                return pickle.load(f)
            except RecursionError:
                raise TooDeep("the stored pickle nests deeper than Python recurses") from None


def _mac_of(path: Path, key: bytes) -> str:
    """HMAC-SHA256 of the file, read in blocks so memory stays bounded, as base64url."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    with path.open("rb") as f:
        while block := f.read(_MAC_BLOCK):
            mac.update(block)
    return base64.urlsafe_b64encode(mac.digest()).decode("ascii")


def _verify_signature(target: Target, info: ObjectInfo, path: Path, key: bytes) -> None:
    """Refuse, before a single byte is unpickled, a pickle whose recorded HMAC is missing or
    is not the HMAC of the bytes just downloaded under this key."""
    recorded = info.metadata.get(SIGNATURE_KEY, "")
    if not recorded:
        raise UntrustedPickle(
            "the pickle carries no signature (natsobj.hmac), and this IO manager loads only "
            "signed pickles",
            bucket=target.bucket,
            name=target.name,
            hint="Materialize the upstream asset again with the same pickle_signing_key so it "
            "is signed; if you did not write this object, delete it.",
        )
    expected = _SIGNATURE_SCHEME + _mac_of(path, key)
    if not hmac.compare_digest(recorded.encode(), expected.encode()):
        raise UntrustedPickle(
            "the pickle's signature (natsobj.hmac) does not match its bytes under this IO "
            "manager's key: it was changed or signed with another key",
            bucket=target.bucket,
            name=target.name,
            hint="Check that writer and reader use the same pickle_signing_key, then "
            "materialize the upstream asset again; if you did not write this object, delete it.",
        )


def arrow_table_schema(schema: Any) -> TableSchema:
    return TableSchema(columns=[TableColumn(name=f.name, type=str(f.type)) for f in schema])


def unwrap_annotation(tp: Any) -> Any:
    """``Optional[X]`` -> X and ``dict[str, X]`` -> X: the type of one stored object."""
    if tp is dict:
        return Any  # several partitions of whatever was stored
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return unwrap_annotation(args[0])
    if is_mapping_annotation(tp) and len(args) == 2:
        return unwrap_annotation(args[1])
    return tp


def is_mapping_annotation(tp: Any) -> bool:
    """Whether the input asks for several partitions as a dict."""
    return tp is dict or typing.get_origin(tp) in (dict, Mapping)
