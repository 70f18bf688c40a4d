"""The archive through its faces: the CLI, the Airflow operator (example DAG under
``airflow dags test``) and the Dagster job, all against moto's server and a real nats-server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

from click.testing import CliRunner

from natsobj.archive import ArchiveTarget, ArchiveTargets, load_index
from natsobj.archive.target import S3Options
from natsobj.cli.app import cli
from natsobj.cli.exits import ExitCode
from natsobj.model import digest_of
from tests.airflow.conftest import (  # noqa: F401  (airflow_db ... run_dag are fixtures)
    AIRFLOW_BIN,
    REPO,
    airflow_db,
    nats_default,
    run_airflow,
    run_dag,
    xcom,
)


def invoke(nats_url: str, *args: str):
    return CliRunner().invoke(cli, ["--url", nats_url, "archive", *args], catch_exceptions=False)


def test_cli_run_status_verify(nats_url, store, archive_url):
    store.put("a", b"alpha")
    store.put("b", os.urandom(50_000))
    ran = invoke(nats_url, "run", store.bucket, "--to", archive_url, "--once")
    assert ran.exit_code == 0, ran.output
    assert "2 versions" in ran.output

    store.put("c", b"not yet archived")
    status = invoke(nats_url, "status", store.bucket, "--json")  # target found in the stream
    assert status.exit_code == 0, status.output
    doc = json.loads(status.output)
    assert doc["target"] == archive_url and doc["versions"] == 2
    assert doc["lag_sequences"] > 0 and doc["lag_seconds"] >= 0

    invoke(nats_url, "run", store.bucket, "--to", archive_url, "--once")
    doc = json.loads(invoke(nats_url, "status", store.bucket, "--json").output)
    assert doc["lag_sequences"] == 0 and doc["versions"] == 3

    verified = invoke(nats_url, "verify", archive_url)
    assert verified.exit_code == 0 and "checked 3 versions" in verified.output


def test_cli_verify_exits_with_the_digest_mismatch_code_on_corruption(nats_url, store, archive_url):
    store.put("a", b"alpha")
    invoke(nats_url, "run", store.bucket, "--to", archive_url, "--once")
    target = ArchiveTarget(archive_url)
    pack = asyncio.run(target.list("packs/"))[0]
    asyncio.run(target.put_bytes(pack, b"alphX"))
    verified = CliRunner().invoke(cli, ["archive", "verify", archive_url])
    assert verified.exit_code == ExitCode.DIGEST_MISMATCH
    assert "BAD a" in verified.output


def test_cli_bad_target_is_a_usage_error(nats_url, store):
    result = CliRunner().invoke(
        cli, ["--url", nats_url, "archive", "run", store.bucket, "--to", "/tmp/x", "--once"]
    )
    assert result.exit_code == ExitCode.USAGE and "s3://bucket/prefix" in result.output


def test_secrets_stay_out_of_reprs():
    options = S3Options(access_key_id="AKIAEXAMPLE", secret_access_key="very-secret-value")
    target = ArchiveTarget("s3://bkt/prefix", options)
    for text in (repr(options), repr(target), str(target.options)):
        assert "very-secret-value" not in text and "AKIAEXAMPLE" not in text


def test_airflow_example_dag_archives_the_bucket(
    nats_default,  # noqa: F811
    store,
    archive_url,
    s3_env,
):
    store.put("report.csv", b"a,b\n1,2\n")
    env = {
        **os.environ,
        "NATSOBJ_DEMO_BUCKET": store.bucket,
        "NATSOBJ_ARCHIVE_TARGET": archive_url,
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
    }
    result = subprocess.run(
        [
            AIRFLOW_BIN,
            "dags",
            "test",
            "airflow_archive",
            "-f",
            str(REPO / "example_dags" / "airflow_archive.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in output
    summary = xcom("airflow_archive", "archive")
    assert summary["versions"] == 1 and summary["target"] == archive_url
    records = asyncio.run(load_index(ArchiveTarget(archive_url)))
    assert [(r.name, r.digest) for r in records] == [("report.csv", digest_of(b"a,b\n1,2\n"))]


def test_airflow_operator_takes_s3_from_an_aws_connection(
    run_dag,  # noqa: F811
    store,
    archive_url,
    moto,
):
    """The worker's own AWS environment points nowhere; only the connection reaches moto."""
    store.put("x.bin", b"payload")
    connection = {
        "conn_type": "aws",
        "login": "archive-test-key",
        "password": "connection-secret-value",
        "extra": {"endpoint_url": moto.endpoint, "region_name": "us-east-1"},
    }
    result = run_dag(
        f"""
        from datetime import datetime
        from airflow.sdk import dag
        from airflow_natsobj.operators.archive import NatsArchiveOperator

        @dag(schedule=None, start_date=datetime(2026, 1, 1))
        def DAG_ID():
            NatsArchiveOperator(
                task_id="archive",
                bucket="{store.bucket}",
                target="{archive_url}",
                aws_conn_id="aws_archive",
                give_up_after=5,
            )

        DAG_ID()
        """,
        env={
            "AIRFLOW_CONN_AWS_ARCHIVE": json.dumps(connection),
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        },
    )
    assert result.returncode == 0, result.output[-6000:]
    assert "connection-secret-value" not in result.output
    assert result.xcom("archive")["versions"] == 1
    records = asyncio.run(load_index(ArchiveTarget(archive_url)))
    assert [r.name for r in records] == ["x.bin"]


def test_dagster_archive_job(nats_url, store, archive_url):
    from dagster import RunConfig

    from dagster_natsobj import NatsObjectStoreResource
    from dagster_natsobj.archive import NatsArchiveConfig, make_nats_archive_job

    store.put("model.pkl", b"weights")
    job = make_nats_archive_job("nats_archive")
    result = job.execute_in_process(
        run_config=RunConfig(
            ops={"nats_archive_pass": NatsArchiveConfig(bucket=store.bucket, target=archive_url)}
        ),
        resources={"nats": NatsObjectStoreResource(url=nats_url)},
    )
    assert result.success
    summary = result.output_for_node("nats_archive_pass")
    assert summary["versions"] == 1 and summary["bytes"] == len(b"weights")
    records = asyncio.run(load_index(ArchiveTarget(archive_url)))
    assert [r.name for r in records] == ["model.pkl"]


def test_cli_run_follows_until_sigterm(nats_url, store, archive_url):
    """Without --once the archiver keeps following; SIGTERM stops it cleanly."""
    import signal
    import sys
    import time

    command = ["archive", "run", store.bucket, "--to", archive_url, "--pack-age", "0.2"]
    process = subprocess.Popen(
        [sys.executable, "-m", "natsobj.cli", "--url", nats_url, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    target = ArchiveTarget(archive_url)
    try:
        for round_ in range(2):  # two separate changes, each archived while it runs
            store.put(f"r{round_}", f"round {round_}".encode())
            deadline = time.monotonic() + 120
            while (
                asyncio.run(ArchiveTargets.of(target).indexed_through())
                < store.get_info(f"r{round_}").sequence
            ):
                assert process.poll() is None, process.stderr.read()
                assert time.monotonic() < deadline, "the running archiver did not pick it up"
                time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "2 versions" in out
    assert [r.name for r in asyncio.run(load_index(target))] == ["r0", "r1"]


def test_cli_status_without_an_archive_says_what_to_do(nats_url, store):
    result = CliRunner().invoke(cli, ["--url", nats_url, "archive", "status", store.bucket])
    assert result.exit_code == ExitCode.FAILED
    assert "has no archive recorded" in result.output and "--to s3://" in result.output
