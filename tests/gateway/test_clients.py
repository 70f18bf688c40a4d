"""Real S3 clients against the gateway on a real nats-server, each with the settings
docs/gateway.md's "Clients" section gives: the AWS CLI (as a subprocess), boto3 with its default
checksums and transfer settings, s3fs, pyarrow's native S3FileSystem, polars' native Parquet
scan and obstore."""

from __future__ import annotations

import base64
import functools
import os
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tests.fetch_counter import FetchCounter
from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread, make_s3

REGION = "us-east-1"


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"cl-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


class ServedBytes:
    """``with ServedBytes() as served:`` then ``served.bytes``: the object bytes the gateway
    streamed to its clients meanwhile (every GET body, whole or ranged, goes out through
    aiohttp's ``StreamResponse.write``; XML answers are not streamed), counted by a spy on that
    method: the real method runs, and the gateway runs in this process."""

    def __init__(self) -> None:
        self.bytes = 0
        self._original: Any = None

    def __enter__(self) -> ServedBytes:
        self._original = original = web.StreamResponse.write

        @functools.wraps(original)
        async def counted(response: web.StreamResponse, data: bytes) -> None:
            self.bytes += len(data)
            await original(response, data)

        web.StreamResponse.write = counted  # type: ignore[method-assign]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        web.StreamResponse.write = self._original  # type: ignore[method-assign]


# --- the AWS CLI -----------------------------------------------------------------------------


def _aws(gateway: GatewayThread, home: Path, *args: str) -> str:
    """Run ``aws`` with only the gateway's key in its environment; a failure shows its stderr."""
    executable = shutil.which("aws", path=str(Path(sys.executable).parent))  # the dev extra's
    assert executable is not None, "the AWS CLI (aws, in the dev extra) is not installed"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
    }
    done = subprocess.run(
        [executable, "--endpoint-url", gateway.endpoint, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"aws {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_aws_cli_cp_sync_ls_and_ranged_get(
    gateway: GatewayThread, bucket: str, s3, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    home.mkdir()
    # the CLI presigns with Signature Version 2 unless told otherwise; the gateway speaks SigV4
    (home / "config").write_text("[default]\ns3 =\n    signature_version = s3v4\n")
    source = tmp_path / "source"
    (source / "nested").mkdir(parents=True)
    files = {
        "a.txt": b"alpha\n" * 1000,
        "b.bin": os.urandom(9 * 1024 * 1024),  # above the CLI's 8 MiB threshold: multipart
        "nested/c.csv": b"x,y\n1,2\n",
    }
    for name, data in files.items():
        (source / name).write_bytes(data)

    _aws(gateway, home, "s3", "cp", str(source / "a.txt"), f"s3://{bucket}/single/a.txt")
    assert s3.get_object(Bucket=bucket, Key="single/a.txt")["Body"].read() == files["a.txt"]

    _aws(gateway, home, "s3", "sync", str(source), f"s3://{bucket}/synced")
    listed = _aws(gateway, home, "s3", "ls", "--recursive", f"s3://{bucket}/synced/")
    assert sorted(line.split()[-1] for line in listed.splitlines()) == sorted(
        f"synced/{name}" for name in files
    )
    assert s3.head_object(Bucket=bucket, Key="synced/b.bin")["ETag"].endswith('-2"')  # 8 MiB parts
    top = _aws(gateway, home, "s3", "ls", f"s3://{bucket}/synced/")
    assert "PRE nested/" in top and "a.txt" in top

    back = tmp_path / "back"
    _aws(gateway, home, "s3", "sync", f"s3://{bucket}/synced", str(back))
    assert {name: (back / name).read_bytes() for name in files} == files
    # a second sync finds nothing to do: sizes and times agree
    assert _aws(gateway, home, "s3", "sync", str(source), f"s3://{bucket}/synced") == ""

    part = tmp_path / "part.bin"
    answer = _aws(
        gateway,
        home,
        "s3api",
        "get-object",
        "--bucket",
        bucket,
        "--key",
        "synced/b.bin",
        "--range",
        "bytes=1000-1999",
        str(part),
    )
    assert part.read_bytes() == files["b.bin"][1000:2000]
    assert f"bytes 1000-1999/{len(files['b.bin'])}" in answer

    url = _aws(gateway, home, "s3", "presign", f"s3://{bucket}/synced/a.txt").strip()
    assert "X-Amz-Signature=" in url
    with urllib.request.urlopen(url) as presigned:
        assert presigned.read() == files["a.txt"]


# --- boto3 ------------------------------------------------------------------------------------


def test_boto3_default_checksums_and_upload_file_multipart(
    gateway: GatewayThread, bucket: str, tmp_path: Path
) -> None:
    """boto3 as it comes: a CRC32 on every upload (botocore's default since early 2025) and
    ``upload_file``/``download_file`` with the default transfer settings, so a file above the
    8 MiB threshold goes up as a multipart upload and comes down as parallel ranged GETs."""
    s3 = make_s3(gateway.endpoint)
    assert s3.meta.config.request_checksum_calculation == "when_supported"  # the default
    sent: dict[str, list[str]] = {}

    def record(request: Any, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]  # before-send.s3.<operation>
        sent.setdefault(operation, []).extend(k.lower() for k in request.headers)

    s3.meta.events.register("before-send.s3", record)
    put = s3.put_object(Bucket=bucket, Key="small.txt", Body=b"checked by a crc32")
    assert put["ChecksumCRC32"]  # echoed, as S3 does; botocore compares it with its own
    data = os.urandom(2 * 8 * 1024 * 1024 + 4321)
    (tmp_path / "big.bin").write_bytes(data)
    s3.upload_file(str(tmp_path / "big.bin"), bucket, "big.bin")
    assert "x-amz-checksum-crc32" in sent["PutObject"]
    assert len(sent["UploadPart"]) > 0 and "x-amz-checksum-crc32" in sent["UploadPart"]
    head = s3.head_object(Bucket=bucket, Key="big.bin")
    assert head["ETag"].endswith('-3"') and head["ContentLength"] == len(data)
    s3.download_file(bucket, "big.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == data
    assert s3.get_object(Bucket=bucket, Key="small.txt")["Body"].read() == b"checked by a crc32"


# --- s3fs ------------------------------------------------------------------------------------


def test_s3fs_reads_writes_lists(gateway: GatewayThread, bucket: str) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(
        key=ACCESS_KEY,
        secret=SECRET,
        endpoint_url=gateway.endpoint,
        client_kwargs={"region_name": REGION},
        config_kwargs={"signature_version": "s3v4"},  # sign() presigns with SigV4
        skip_instance_cache=True,
    )
    data = os.urandom(2 * 1024 * 1024)  # one block: below s3fs's multipart threshold
    with fs.open(f"{bucket}/dir/data.bin", "wb") as out:
        out.write(data)
    fs.pipe(f"{bucket}/dir/sub/small.txt", b"small")
    assert fs.cat(f"{bucket}/dir/data.bin") == data
    assert fs.ls(f"{bucket}/dir", detail=False) == [f"{bucket}/dir/data.bin", f"{bucket}/dir/sub"]
    assert fs.find(f"{bucket}/dir") == [f"{bucket}/dir/data.bin", f"{bucket}/dir/sub/small.txt"]
    assert fs.info(f"{bucket}/dir/data.bin")["size"] == len(data)
    assert fs.isdir(f"{bucket}/dir/sub")
    with fs.open(f"{bucket}/dir/data.bin", "rb", block_size=64 * 1024) as got:
        got.seek(1_000_000)
        assert got.read(100) == data[1_000_000:1_000_100]
    assert fs.cat_file(f"{bucket}/dir/data.bin", start=10, end=20) == data[10:20]
    with urllib.request.urlopen(fs.sign(f"{bucket}/dir/sub/small.txt")) as presigned:
        assert presigned.read() == b"small"
    fs.rm(f"{bucket}/dir", recursive=True)
    assert fs.find(f"{bucket}/dir", refresh=True) == []


# --- pyarrow's S3FileSystem --------------------------------------------------------------------


@pytest.fixture
def pyarrow_s3(gateway: GatewayThread, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """pyarrow's S3FileSystem on the gateway, with its AWS SDK's defaults: a write's body goes
    aws-chunked with a trailing CRC64NVME checksum, which the gateway verifies."""
    from pyarrow import fs

    monkeypatch.delenv("AWS_REQUEST_CHECKSUM_CALCULATION", raising=False)
    return fs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET,
        endpoint_override=urlsplit(gateway.endpoint).netloc,
        scheme="http",
        region=REGION,
        allow_delayed_open=True,  # a small file is one PutObject, not a multipart upload
    )


def _table(rows: int):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.table(
        {
            "part": [f"p{i % 3}" for i in range(rows)],
            "n": list(range(rows)),
            "wide": [os.urandom(48).hex() for _ in range(rows)],
        }
    )


def test_pyarrow_partitioned_dataset_and_one_column_read(s3, bucket: str, pyarrow_s3) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from awscrt.checksums import crc64nvme

    arrow = pyarrow_s3
    table = _table(30_000)
    ds.write_dataset(
        table,
        f"{bucket}/sales",
        format="parquet",
        partitioning=["part"],
        partitioning_flavor="hive",
        filesystem=arrow,
    )
    dataset = ds.dataset(f"{bucket}/sales", format="parquet", partitioning="hive", filesystem=arrow)
    back = dataset.to_table().sort_by("n")
    assert back.column("n").to_pylist() == table.column("n").to_pylist()
    assert back.column("part").to_pylist() == table.column("part").to_pylist()
    only_p1 = dataset.to_table(filter=ds.field("part") == "p1")
    assert only_p1.num_rows == 10_000

    pq.write_table(table, f"{bucket}/flat.parquet", filesystem=arrow)
    size = arrow.get_file_info(f"{bucket}/flat.parquet").size
    # the SDK's default trailing CRC64NVME was verified and kept with the object
    kept = s3.head_object(Bucket=bucket, Key="flat.parquet", ChecksumMode="ENABLED")
    body = s3.get_object(Bucket=bucket, Key="flat.parquet")["Body"].read()
    crc = base64.b64encode(crc64nvme(body).to_bytes(8, "big")).decode()
    assert kept["ChecksumCRC64NVME"] == crc
    with ServedBytes() as served, FetchCounter() as fetched:
        column = pq.read_table(f"{bucket}/flat.parquet", columns=["n"], filesystem=arrow)
    assert column.column("n").to_pylist() == list(range(30_000))
    # the wide column is most of the file: a one-column read asks only for the other's ranges,
    # and the gateway reads from NATS only the chunks that hold them
    assert 0 < served.bytes < size // 4
    assert 0 < fetched.bytes < size // 4


# --- polars' native scan_parquet ---------------------------------------------------------------


def test_polars_scan_parquet_pushes_down_predicate_and_projection(
    gateway: GatewayThread, bucket: str, pyarrow_s3
) -> None:  # type: ignore[no-untyped-def]
    import polars as pl
    import pyarrow.parquet as pq

    table = _table(40_000)
    pq.write_table(table, f"{bucket}/t.parquet", filesystem=pyarrow_s3, row_group_size=5_000)
    layout = pq.ParquetFile(f"{bucket}/t.parquet", filesystem=pyarrow_s3).metadata
    size = pyarrow_s3.get_file_info(f"{bucket}/t.parquet").size
    n_chunks = [layout.row_group(i).column(1).total_compressed_size for i in range(8)]
    options = {
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET,
        "aws_region": REGION,
        "aws_endpoint_url": gateway.endpoint,
        "aws_allow_http": "true",
    }
    scan = pl.scan_parquet(f"s3://{bucket}/t.parquet", storage_options=options)
    assert scan.collect().height == 40_000
    with ServedBytes() as projected:
        assert scan.select("n").collect()["n"].to_list() == list(range(40_000))
    with ServedBytes() as filtered:
        picked = scan.filter(pl.col("n") >= 35_000).select("n").collect()
    assert picked["n"].to_list() == list(range(35_000, 40_000))
    # projection leaves the wide column unread; the predicate, by the row groups' statistics,
    # leaves unread the column chunks of every row group but the last
    assert 0 < projected.bytes < size // 4
    assert 0 < filtered.bytes <= projected.bytes - sum(n_chunks[:-1])
    # polars' own writer: its SDK sends a CRC64NVME checksum with the body, as pyarrow's does
    written = pl.DataFrame({"n": range(1000), "s": ["x"] * 1000})
    written.write_parquet(f"s3://{bucket}/w.parquet", storage_options=options)
    back = pl.read_parquet(f"s3://{bucket}/w.parquet", storage_options=options)
    assert back.equals(written)


# --- obstore ---------------------------------------------------------------------------------


def test_obstore_put_get_range_list_delete(gateway: GatewayThread, bucket: str) -> None:
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        bucket,
        endpoint=gateway.endpoint,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET,
        region=REGION,
        client_options={"allow_http": True},
    )
    data = os.urandom(1024 * 1024)
    obstore.put(store, "obs/data.bin", data)
    obstore.put(store, "obs/deeper/x.txt", b"x")
    assert bytes(obstore.get(store, "obs/data.bin").bytes()) == data
    assert bytes(obstore.get_range(store, "obs/data.bin", start=5, end=500)) == data[5:500]
    assert obstore.head(store, "obs/data.bin")["size"] == len(data)
    listed = [meta["path"] for batch in obstore.list(store, prefix="obs") for meta in batch]
    assert sorted(listed) == ["obs/data.bin", "obs/deeper/x.txt"]
    shallow = obstore.list_with_delimiter(store, prefix="obs")
    assert shallow["common_prefixes"] == ["obs/deeper"]
    assert [meta["path"] for meta in shallow["objects"]] == ["obs/data.bin"]
    # conditional puts: If-None-Match: * creates, If-Match replaces only what was read
    with pytest.raises(obstore.exceptions.AlreadyExistsError):
        obstore.put(store, "obs/data.bin", b"again", mode="create")
    seen = obstore.head(store, "obs/deeper/x.txt")["e_tag"]
    obstore.put(store, "obs/deeper/x.txt", b"y", mode={"e_tag": seen})
    with pytest.raises(obstore.exceptions.PreconditionError):
        obstore.put(store, "obs/deeper/x.txt", b"z", mode={"e_tag": seen})
    assert bytes(obstore.get(store, "obs/deeper/x.txt").bytes()) == b"y"
    obstore.delete(store, "obs/data.bin")
    with pytest.raises(FileNotFoundError):
        obstore.head(store, "obs/data.bin")
