"""One ``nats://[conn_id@]bucket/key`` parser (natsobj.paths.parse_nats_url): its rule, and
every face that reads these URLs reading each one the same way through it: the fsspec
filesystem (and so Airflow's ObjectStoragePath), the Spark source's load path, Airflow's asset
URIs and the CLI's sync."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from natsobj.cli.app import cli
from natsobj.fs import NatsObjectFileSystem
from natsobj.paths import NatsPath, is_nats_url, nats_url, parse_nats_url
from natsobj.spark.options import SourceOptions

CASES = [
    ("nats://b/k", NatsPath("b", "k")),
    ("nats://b/dir/", NatsPath("b", "dir/")),
    ("nats://b/a/b/c.csv", NatsPath("b", "a/b/c.csv")),
    ("nats://b", NatsPath("b", "")),
    ("nats://b/", NatsPath("b", "")),
    ("nats://conn@b/k", NatsPath("b", "k", conn_id="conn")),
    ("nats://user@host@b/k", NatsPath("b", "k", conn_id="user@host")),
    ("nats://b/what?is#this", NatsPath("b", "what?is#this")),  # names, not query or fragment
    ("b/k", NatsPath("b", "k")),  # the scheme is optional
]


@pytest.mark.unit
@pytest.mark.parametrize(("url", "path"), CASES)
def test_the_rule(url: str, path: NatsPath) -> None:
    assert parse_nats_url(url) == path
    assert is_nats_url(url) == url.startswith("nats://")


@pytest.mark.unit
@pytest.mark.parametrize(("bucket", "key"), [("b", "k"), ("b", ""), ("b", "d/"), ("b", "/k")])
def test_printing_and_parsing_round_trip(bucket: str, key: str) -> None:
    parsed = parse_nats_url(nats_url(bucket, key))
    assert (parsed.bucket, parsed.key) == (bucket, key.lstrip("/"))


@pytest.mark.unit
@pytest.mark.parametrize(("url", "path"), [c for c in CASES if c[0].startswith("nats://")])
def test_the_filesystem_reads_it_so(url: str, path: NatsPath) -> None:
    assert NatsObjectFileSystem._strip_protocol(url) == path.path


@pytest.mark.parametrize(
    ("url", "path"), [c for c in CASES if c[0].startswith("nats://") and c[1].key]
)
def test_the_spark_source_reads_it_so(url: str, path: NatsPath) -> None:
    options = SourceOptions.parse({"path": url, "url": "nats://127.0.0.1:4222"})
    assert (options.bucket, options.prefix) == (path.bucket, path.key.strip("/"))


@pytest.mark.parametrize(("url", "path"), [c for c in CASES if c[0].startswith("nats://")])
def test_airflow_asset_uris_read_it_so(url: str, path: NatsPath) -> None:
    from airflow_natsobj.assets import asset_uri, sanitize_uri, split_asset_uri

    assert split_asset_uri(url) == (path.bucket, path.key)
    assert urlsplit(url)._replace(netloc=path.bucket) == sanitize_uri(urlsplit(url))
    assert split_asset_uri(asset_uri(path.bucket, path.key)) == (path.bucket, path.key)


def test_cli_sync_reads_it_so(nats_url: str, sync_client, bucket_name: str, tmp_path) -> None:
    store = sync_client.create_store(bucket_name)
    store.put("dir/a.txt", b"a")
    store.put("other.txt", b"o")
    runner = CliRunner()
    args = ["--url", nats_url, "sync", f"nats://{bucket_name}/dir/", str(tmp_path / "out")]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert [p.name for p in Path(tmp_path / "out").iterdir()] == ["a.txt"]
    # An Airflow connection id means nothing to the CLI: refused, not read as a bucket.
    args = ["--url", nats_url, "sync", f"nats://conn@{bucket_name}/dir", str(tmp_path / "x")]
    refused = runner.invoke(cli, args)
    assert refused.exit_code == 2, refused.output
    assert "name a bucket" in refused.output
