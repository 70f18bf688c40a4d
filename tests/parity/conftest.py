"""Both sides of the parity matrix: ``s3://`` through s3fs (and pyarrow's, polars' and
DuckDB's own S3 readers) on a moto server process, and ``nats://`` through natsobj on the
session's nats-server, each with a bucket of the same name so that results compare as they
are."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
import s3fs

from tests.archive.conftest import S3_ENV, MotoServer, start_moto, stop_moto
from tests.parity.matrix import Side


@pytest.fixture(scope="session")
def parity_moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = start_moto(tmp_path_factory.mktemp("parity-moto"))
    yield server
    stop_moto(server)


@pytest.fixture(scope="session")
def lake() -> str:
    """The bucket both sides use: a name S3 and NATS both accept."""
    return f"lake{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def s3_side(parity_moto: MotoServer, lake: str) -> Iterator[Side]:
    """s3fs, and the AWS environment pyarrow's and polars' own S3 clients read."""
    env = {**S3_ENV, "AWS_ENDPOINT_URL": parity_moto.endpoint, "AWS_EC2_METADATA_DISABLED": "true"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        options = {
            "key": S3_ENV["AWS_ACCESS_KEY_ID"],
            "secret": S3_ENV["AWS_SECRET_ACCESS_KEY"],
            "client_kwargs": {"endpoint_url": parity_moto.endpoint},
        }
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
        fs.mkdir(lake)
        yield Side("s3", fs, options, lake)


@pytest.fixture(scope="session")
def nats_side(nats_url: str, lake: str) -> Side:
    options = {"servers": nats_url}
    fs = fsspec.filesystem("nats", skip_instance_cache=True, **options)
    fs.mkdir(lake)
    return Side("nats", fs, options, lake)


@pytest.fixture
def local_dir(tmp_path: Path) -> Path:
    os.makedirs(tmp_path / "local", exist_ok=True)
    return tmp_path / "local"
