"""fsspec's own abstract filesystem suite (``fsspec.tests.abstract``, the one s3fs runs in
``s3fs/tests/derived``) against ``nats://`` on a real nats-server: copy, get, put, pipe and
open, every test the installed fsspec ships, each in a fresh bucket."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator

import fsspec.tests.abstract as abstract
import pytest

from natsobj.fs import NatsObjectFileSystem


class NatsFixtures(abstract.AbstractFixtures):
    """The fixtures fsspec asks a filesystem to provide. An object store has no empty
    directories (a prefix exists while an object lives under it), as s3fs declares too."""

    @pytest.fixture
    def fs(self, nats_url: str) -> NatsObjectFileSystem:
        return NatsObjectFileSystem(servers=nats_url, skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self, fs: NatsObjectFileSystem, bucket_name: str) -> Iterator[str]:
        fs.mkdir(bucket_name)
        yield bucket_name
        fs.rm(bucket_name, recursive=True)

    @pytest.fixture
    def fs_join(self) -> Callable[..., str]:
        return posixpath.join

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        return False


class TestNatsCopy(abstract.AbstractCopyTests, NatsFixtures):
    pass


class TestNatsGet(abstract.AbstractGetTests, NatsFixtures):
    pass


class TestNatsPut(abstract.AbstractPutTests, NatsFixtures):
    pass


class TestNatsPipe(abstract.AbstractPipeTests, NatsFixtures):
    pass


class TestNatsOpen(abstract.AbstractOpenTests, NatsFixtures):
    pass
