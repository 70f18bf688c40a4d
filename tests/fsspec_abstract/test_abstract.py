"""fsspec's own abstract filesystem suite (``fsspec.tests.abstract``, the one s3fs runs in
``s3fs/tests/derived``) against ``nats://`` on a real nats-server: copy, get, put, pipe and
open, every suite the installed fsspec ships, each in a fresh bucket."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator

import fsspec
import fsspec.tests.abstract as abstract
import pytest
from packaging.version import Version

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


# Every suite the installed fsspec ships, so a newer fsspec's suites run too: fsspec 2024.6 (the
# floor make test-compat installs) has no pipe suite; the version make test installs has it.
SUITES = sorted(n for n in dir(abstract) if n.startswith("Abstract") and n.endswith("Tests"))
for _suite in SUITES:
    _name = f"TestNats{_suite.removeprefix('Abstract').removesuffix('Tests')}"
    globals()[_name] = type(_name, (getattr(abstract, _suite), NatsFixtures), {})


def test_no_suite_is_left_out() -> None:
    """The floor's three suites always run; the fsspec make test installs has five."""
    expected = {"AbstractCopyTests", "AbstractGetTests", "AbstractPutTests"}
    if Version(fsspec.__version__) >= Version("2026.9"):
        expected |= {"AbstractOpenTests", "AbstractPipeTests"}
    assert expected <= set(SUITES), SUITES
