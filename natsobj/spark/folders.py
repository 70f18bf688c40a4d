"""A read of partition folders of a dataset: ``load("sales/daily/region=eu")``, as
``spark.read.parquet("s3a://.../sales/daily/region=eu")`` reads one partition.

The folder has no manifest of its own; the dataset's, found where the trailing ``col=value``
folders end, says which of the objects under it are committed. A listing would also take the
parts of unfinished writes, and during an overwrite's commit the parts it replaces.
The parts are chosen when the DataFrame is loaded, so every scan of it (a re-scan, a
self-join, a union) reads that folder and only that folder's bytes are fetched.

As in Spark, the columns of the folders in the path are left out of the schema unless option
``basePath`` names the dataset: then the read is the dataset narrowed to the folder, with all
its columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import natsobj
from natsobj.spark.errors import BadSparkOption, DatasetNotFound
from natsobj.spark.manifest import Manifest
from natsobj.spark.options import SourceOptions
from natsobj.spark.partition_values import path_values
from natsobj.spark.partitions import Layout, dataset_layout
from natsobj.spark.storage import TablePlan, read_manifest


@dataclass(frozen=True)
class FolderRead:
    """The dataset a folder belongs to, and what the read keeps of it."""

    base: str  # the dataset's prefix, where its manifest is
    manifest: Manifest
    fixed: tuple[str, ...]  # the partition columns the folders in the path fix
    with_fixed: bool  # basePath given: the fixed columns stay in the schema

    def reader_options(self, opts: SourceOptions) -> SourceOptions:
        """The options the reader takes: partition values are read from the names below the
        dataset's prefix when the fixed columns are kept, else below the folder."""
        return dataclasses.replace(opts, prefix=self.base) if self.with_fixed else opts

    def layout(self) -> Layout:
        """The partition columns the read has: the dataset's, less the fixed ones unless
        ``basePath`` was given."""
        full = dataset_layout(self.base, (), manifest=self.manifest, where=self.base)
        if self.with_fixed:
            return full
        return Layout(full.columns[len(self.fixed) :], full.types[len(self.fixed) :])

    def plan(self, opts: SourceOptions) -> TablePlan:
        """The generation's parts under the folder; none is an error, as Spark's file sources
        fail on a path that does not exist (a misspelt value would otherwise read nothing)."""
        head = opts.prefix + "/"
        parts = tuple(p for p in self.manifest.parts if p.name.startswith(head))
        if not parts:
            raise DatasetNotFound(
                f"partition folder {opts.prefix!r} of dataset {self.base!r} not found: "
                f"generation {self.manifest.generation} has no part under it",
                bucket=opts.bucket,
            )
        return TablePlan(parts, self.manifest)

    def schema(self) -> dict[str, Any]:
        """The manifest's schema, without the fixed columns unless ``basePath`` was given."""
        schema = self.manifest.schema
        if self.with_fixed:
            return schema
        fields = [f for f in schema.get("fields", []) if f["name"] not in self.fixed]
        return {**schema, "fields": fields}


def folder_read(store: natsobj.ObjectStore, opts: SourceOptions) -> FolderRead | None:
    """The dataset ``opts.prefix`` is a partition folder of; None when it is not one (a
    dataset of its own, a folder of foreign files), and it is read as before."""
    if opts.base_path is None:
        if "=" not in opts.prefix.rpartition("/")[2] or read_manifest(store, opts.prefix):
            return None
        return _walk_up(store, opts)
    base = opts.base_path
    if opts.prefix == base:
        return None
    fixed = _folder_columns(base, opts.prefix)
    manifest = read_manifest(store, base)
    if fixed is None or manifest is None:
        raise BadSparkOption(
            f"option basePath {base!r} is not a dataset that {opts.prefix!r} is a partition "
            "folder of" + ("" if manifest else f" (no manifest under {base!r})"),
            bucket=opts.bucket,
            hint="Give the dataset's prefix, e.g. basePath 'sales/daily' for "
            "load('sales/daily/region=eu').",
        )
    return _checked(opts, FolderRead(base, manifest, fixed, with_fixed=True))


def _walk_up(store: natsobj.ObjectStore, opts: SourceOptions) -> FolderRead | None:
    """The nearest prefix above ``opts.prefix``, past ``col=value`` folders only, that holds
    a manifest."""
    base = opts.prefix
    while "=" in base.rpartition("/")[2] and "/" in base:
        base = base.rpartition("/")[0]
        manifest = read_manifest(store, base)
        if manifest is not None:
            fixed = _folder_columns(base, opts.prefix)
            assert fixed is not None  # every folder passed on the way up is col=value
            return _checked(opts, FolderRead(base, manifest, fixed, with_fixed=False))
    return None


def _folder_columns(base: str, folder: str) -> tuple[str, ...] | None:
    """The columns of the ``col=value`` folders from ``base`` down to ``folder``; None when
    ``folder`` is not under ``base`` or a folder between them is not ``col=value``."""
    if not folder.startswith(base + "/"):
        return None
    between = folder[len(base) + 1 :].split("/")
    pairs = path_values(base, folder + "/")
    return tuple(c for c, _ in pairs) if len(pairs) == len(between) else None


def _checked(opts: SourceOptions, read: FolderRead) -> FolderRead:
    """The folders must be the dataset's leading partition columns, in order."""
    columns = read.manifest.partition_columns
    if columns[: len(read.fixed)] != read.fixed:
        raise BadSparkOption(
            f"{opts.prefix!r} is not a partition folder of dataset {read.base!r}, which is "
            f"partitioned by {list(columns)}",
            bucket=opts.bucket,
            hint="Read the dataset and filter it, or name its folders in partition order.",
        )
    return read
