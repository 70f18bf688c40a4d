"""The Amazon provider's S3 twins: copy, copy-prefix, list, list-prefixes, delete by prefix and
file transform, in one ``airflow dags test`` run against the real server (with the
OpenLineage provider writing its events to a file), then asserted on task states, XComs, the
store's contents and the lineage emitted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.airflow.conftest import AIRFLOW_BIN, AIRFLOW_HOME, DAGS_DIR, task_states, xcom

SCRIPT = """#!{python}
import sys

source, dest, *args = sys.argv[1:]
print("transforming", source, "with", args)
with open(source, "rb") as i, open(dest, "ab") as o:
    o.write(i.read().upper() + " ".join(args).encode())
sys.exit(3 if "--fail" in args else 0)
"""

DAG_SOURCE = """
from airflow.sdk import DAG, task
from airflow_natsobj.lineage import get_hook_lineage_collector

from airflow_natsobj.operators.copy import NatsCopyObjectOperator, NatsCopyPrefixOperator
from airflow_natsobj.operators.listing import NatsListOperator, NatsListPrefixesOperator
from airflow_natsobj.operators.object_store import NatsDeleteObjectsOperator
from airflow_natsobj.operators.transform import NatsFileTransformOperator

B, OTHER, SCRIPT = "{bucket}", "{other}", "{script}"

with DAG("DAG_ID", schedule=None) as dag:
    copy_url = NatsCopyObjectOperator(
        task_id="copy_url",
        source_bucket_key="nats://" + B + "/raw/a.csv",
        dest_bucket_key="nats://nats_default@" + OTHER + "/in/{{{{ ds }}}}.csv",
    )
    copy_names = NatsCopyObjectOperator(
        task_id="copy_names",
        source_bucket_name=B,
        source_bucket_key="raw/2024/x.csv",
        dest_bucket_name=B,
        dest_bucket_key="raw/a.csv",
    )
    copy_prefix = NatsCopyPrefixOperator(
        task_id="copy_prefix",
        source_bucket_name=B,
        source_bucket_prefix="raw/2024/",
        dest_bucket_name=B,
        dest_bucket_prefix="raw/2024/again/",
    )
    list_all = NatsListOperator(task_id="list_all", bucket=B, prefix="raw/")
    list_level = NatsListOperator(task_id="list_level", bucket=B, prefix="raw/", delimiter="/")
    list_glob = NatsListOperator(task_id="list_glob", bucket=B, glob="raw/**.csv")
    prefixes = NatsListPrefixesOperator(
        task_id="prefixes", bucket=B, prefix="raw/", delimiter="/"
    )
    delete_prefix = NatsDeleteObjectsOperator(task_id="delete_prefix", bucket=B, prefix="tmp/")
    transform = NatsFileTransformOperator(
        task_id="transform",
        source_key="nats://" + B + "/raw/b.csv",
        dest_key="out/b.csv",
        dest_bucket_name=B,
        transform_script=SCRIPT,
        script_args=["--tag", "{{{{ dag.dag_id }}}}"],
    )
    no_overwrite = NatsFileTransformOperator(
        task_id="no_overwrite",
        source_key="nats://" + B + "/raw/b.csv",
        dest_key="nats://" + B + "/out/b.csv",
        transform_script=SCRIPT,
        script_args=["second"],
    )
    replace = NatsFileTransformOperator(
        task_id="replace",
        source_key="nats://" + B + "/raw/b.csv",
        dest_key="nats://" + B + "/out/replaced.csv",
        transform_script=SCRIPT,
        replace=True,
    )
    script_fails = NatsFileTransformOperator(
        task_id="script_fails",
        source_key="nats://" + B + "/raw/b.csv",
        dest_key="nats://" + B + "/out/failed.csv",
        transform_script=SCRIPT,
        script_args=["--fail"],
    )

    @task
    def lineage():
        collected = get_hook_lineage_collector().collected_assets
        return {{
            "inputs": sorted({{a.asset.uri for a in collected.inputs}}),
            "outputs": sorted({{a.asset.uri for a in collected.outputs}}),
        }}

    copy_url >> copy_names >> copy_prefix >> [list_all, list_level, list_glob, prefixes]
    [list_all, list_level, list_glob, prefixes] >> delete_prefix >> transform
    transform >> [no_overwrite, replace, script_fails]
    replace >> lineage()
"""

SEEDED = {
    "raw/a.csv": b"a,1\n",
    "raw/b.csv": b"b,2\n",
    "raw/notes.txt": b"notes",
    "raw/2024/x.csv": b"x,2024\n",
    "raw/2024/y.json": b"{}",
    "raw/2025/z.csv": b"z,2025\n",
    "tmp/1": b"1",
    "tmp/2/3": b"3",
    "tmpfile": b"kept: not below tmp/",
    "out/replaced.csv": b"old",
}


@dataclass
class Run:
    dag_id: str
    bucket: str
    other: str
    returncode: int
    output: str
    events: list[dict[str, Any]]

    def xcom(self, task_id: str) -> Any:
        return xcom(self.dag_id, task_id)


@pytest.fixture(scope="module")
def run(nats_default: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """One DAG run for every assertion of this module."""
    import natsobj

    work = tmp_path_factory.mktemp("parity")
    script = work / "transform.py"
    script.write_text(SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    bucket, other = f"t{uuid.uuid4().hex[:12]}", f"t{uuid.uuid4().hex[:12]}"
    client = natsobj.connect(nats_default)
    try:
        store = client.create_store(bucket)
        client.create_store(other)
        for name, data in SEEDED.items():
            store.put(
                name,
                data,
                description=f"seed {name}",
                metadata={"origin": name},
                headers={"Content-Type": "text/csv"},
            )
        dag_id = f"t_{uuid.uuid4().hex[:10]}"
        path = DAGS_DIR / f"{dag_id}.py"
        source = DAG_SOURCE.format(bucket=bucket, other=other, script=script)
        path.write_text(textwrap.dedent(source).replace("DAG_ID", dag_id))
        events = work / "openlineage.jsonl"
        transport = {"type": "file", "log_file_path": str(events), "append": True}
        env = {
            **os.environ,
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
            "AIRFLOW__OPENLINEAGE__DISABLED": "False",
        }
        try:
            result = subprocess.run(
                [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(path)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                cwd=str(AIRFLOW_HOME),
            )
        finally:
            path.unlink(missing_ok=True)
        emitted = [
            json.loads(line)
            for line in (events.read_text().splitlines() if events.exists() else [])
            if line.strip()
        ]
        yield Run(dag_id, bucket, other, result.returncode, result.stdout + result.stderr, emitted)
    finally:
        for name in (bucket, other):
            if name in client.store_names():
                client.delete_store(name)
        client.close()


@pytest.fixture(scope="module")
def contents(run: Run, nats_default: str) -> dict[str, dict[str, bytes]]:
    """Each bucket's objects after the run, by name."""
    import natsobj

    with natsobj.connect(nats_default) as client:
        return {
            bucket: {
                info.name: client.store(bucket).get_bytes(info.name)
                for info in client.store(bucket).list()
            }
            for bucket in (run.bucket, run.other)
        }


def test_every_task_ends_as_expected(run: Run) -> None:
    states = task_states(run.dag_id)
    failed = {"no_overwrite", "script_fails"}
    assert {task for task, state in states.items() if state == "failed"} == failed, run.output[
        -6000:
    ]
    assert all(states[task] == "success" for task in set(states) - failed), states
    assert len(states) == 13  # every task ran


def test_copy_object_by_url_and_by_names(run: Run, contents) -> None:
    copied = run.xcom("copy_url")
    assert copied["bucket"] == run.other and copied["name"].startswith("in/")
    assert contents[run.other] == {copied["name"]: b"a,1\n"}
    # the source's description, metadata and headers go with it, as S3's copy keeps them
    assert copied["description"] == "seed raw/a.csv"
    assert copied["metadata"] == {"origin": "raw/a.csv"}
    assert copied["headers"]["Content-Type"] == ["text/csv"]
    # copying over an existing name replaces it, as S3's copy does
    assert run.xcom("copy_names")["name"] == "raw/a.csv"
    assert contents[run.bucket]["raw/a.csv"] == b"x,2024\n"


def test_copy_prefix_copies_each_listed_object_once(run: Run, contents) -> None:
    assert run.xcom("copy_prefix") == ["raw/2024/again/x.csv", "raw/2024/again/y.json"]
    assert contents[run.bucket]["raw/2024/again/x.csv"] == b"x,2024\n"
    assert contents[run.bucket]["raw/2024/again/y.json"] == b"{}"
    assert not any(name.startswith("raw/2024/again/again") for name in contents[run.bucket])


def test_list_operators_return_names_as_amazons_do(run: Run) -> None:
    assert run.xcom("list_all") == [
        "raw/2024/again/x.csv",
        "raw/2024/again/y.json",
        "raw/2024/x.csv",
        "raw/2024/y.json",
        "raw/2025/z.csv",
        "raw/a.csv",
        "raw/b.csv",
        "raw/notes.txt",
    ]
    assert run.xcom("list_level") == ["raw/a.csv", "raw/b.csv", "raw/notes.txt"]
    assert run.xcom("list_glob") == [
        "raw/2024/again/x.csv",
        "raw/2024/x.csv",
        "raw/2025/z.csv",
        "raw/a.csv",
        "raw/b.csv",
    ]
    assert run.xcom("prefixes") == ["raw/2024/", "raw/2025/"]


def test_delete_by_prefix_deletes_only_what_starts_with_it(run: Run, contents) -> None:
    assert sorted(run.xcom("delete_prefix")) == ["tmp/1", "tmp/2/3"]
    assert "tmpfile" in contents[run.bucket]
    assert not any(name.startswith("tmp/") for name in contents[run.bucket])


def test_transform_puts_what_the_script_wrote(run: Run, contents) -> None:
    put = run.xcom("transform")
    assert put["name"] == "out/b.csv"
    assert contents[run.bucket]["out/b.csv"] == f"B,2\n--tag {run.dag_id}".encode()
    assert "transforming" in run.output and "'--tag'" in run.output
    # replace=False refused the second put: the first one's output is still there
    assert f"bucket '{run.bucket}', object 'out/b.csv'" in run.output
    assert "Pass replace=True to overwrite it" in run.output
    assert contents[run.bucket]["out/replaced.csv"] == b"B,2\n"
    # a failing script fails the task and puts nothing
    assert "transform script" in run.output and "exited with 3" in run.output
    assert "out/failed.csv" not in contents[run.bucket]


def test_hook_lineage_names_copies_and_transforms(run: Run) -> None:
    lineage = run.xcom("lineage")
    base = f"nats://{run.bucket}/"
    for name in ("raw/a.csv", "raw/2024/x.csv", "raw/2024/y.json", "raw/b.csv"):
        assert base + name in lineage["inputs"], lineage
    for name in ("raw/a.csv", "raw/2024/again/x.csv", "raw/2024/again/y.json", "out/b.csv"):
        assert base + name in lineage["outputs"], lineage
    assert any(uri.startswith(f"nats://{run.other}/in/") for uri in lineage["outputs"])


def test_openlineage_events_name_the_objects(run: Run) -> None:
    complete = {
        e["job"]["name"].rsplit(".", 1)[-1]: e for e in run.events if e["eventType"] == "COMPLETE"
    }

    def names(task: str, side: str) -> list[tuple[str, str]]:
        return [(d["namespace"], d["name"]) for d in complete[task][side]]

    ns, other = f"nats://{run.bucket}", f"nats://{run.other}"
    assert names("copy_url", "inputs") == [(ns, "raw/a.csv")]
    ((namespace, name),) = names("copy_url", "outputs")
    assert namespace == other and name.startswith("in/") and name.endswith(".csv")
    assert names("copy_prefix", "inputs") == [(ns, "raw/2024/x.csv"), (ns, "raw/2024/y.json")]
    assert names("copy_prefix", "outputs") == [
        (ns, "raw/2024/again/x.csv"),
        (ns, "raw/2024/again/y.json"),
    ]
    assert sorted(names("delete_prefix", "outputs")) == [(ns, "tmp/1"), (ns, "tmp/2/3")]
    assert names("transform", "inputs") == [(ns, "raw/b.csv")]
    assert names("transform", "outputs") == [(ns, "out/b.csv")]


def test_lineage_before_the_run_names_what_is_known(nats_default: str) -> None:
    """On start a copy names both objects, a prefix copy both prefixes and a delete by
    prefix nothing yet (its names are known once listed), as Amazon's operators do."""
    from airflow_natsobj.operators.copy import NatsCopyObjectOperator, NatsCopyPrefixOperator
    from airflow_natsobj.operators.object_store import NatsDeleteObjectsOperator
    from airflow_natsobj.operators.transform import NatsFileTransformOperator

    def pairs(datasets: list[Any]) -> list[tuple[str, str]]:
        return [(d.namespace, d.name) for d in datasets]

    copy = NatsCopyObjectOperator(
        task_id="c", source_bucket_key="nats://lake/raw/a.csv", dest_bucket_key="nats://mart/a.csv"
    )
    start = copy.get_openlineage_facets_on_start()
    assert pairs(start.inputs) == [("nats://lake", "raw/a.csv")]
    assert pairs(start.outputs) == [("nats://mart", "a.csv")]
    prefix = NatsCopyPrefixOperator(
        task_id="p",
        source_bucket_name="lake",
        source_bucket_prefix="raw/",
        dest_bucket_prefix="nats://mart/staged/",
    )
    start = prefix.get_openlineage_facets_on_start()
    assert pairs(start.inputs) == [("nats://lake", "raw/")]
    assert pairs(start.outputs) == [("nats://mart", "staged/")]
    delete = NatsDeleteObjectsOperator(task_id="d", bucket="lake", prefix="tmp/")
    start = delete.get_openlineage_facets_on_start()
    assert (start.inputs, start.outputs) == ([], [])
    transform = NatsFileTransformOperator(
        task_id="t",
        source_key="nats://lake/raw/a.csv",
        dest_key="a.csv",
        dest_bucket_name="mart",
        transform_script="/bin/true",
    )
    start = transform.get_openlineage_facets_on_start()
    assert pairs(start.inputs) == [("nats://lake", "raw/a.csv")]
    assert pairs(start.outputs) == [("nats://mart", "a.csv")]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"source_bucket_key": "raw/a.csv"},
            "is not a nats://bucket/name URL: give source_bucket_name",
        ),
        (
            {"source_bucket_key": "nats://lake/a", "source_bucket_name": "lake"},
            "is a full URL while source_bucket_name='lake' is given",
        ),
        ({"source_bucket_key": "nats://other@lake/a"}, "names connection 'other'"),
        ({"source_bucket_key": "nats://lake/"}, "names no bucket and object"),
    ],
)
def test_a_copy_says_which_parameter_to_fix(given: dict[str, str], message: str) -> None:
    from airflow_natsobj.operators.copy import NatsCopyObjectOperator

    copy = NatsCopyObjectOperator(task_id="c", dest_bucket_key="nats://mart/a", **given)
    with pytest.raises(ValueError, match=message):
        copy.execute({})


@pytest.mark.parametrize("given", [{}, {"name": "a", "prefix": "tmp/"}])
def test_delete_takes_names_or_a_prefix_not_both(given: dict[str, str]) -> None:
    from airflow_natsobj.operators.object_store import NatsDeleteObjectsOperator

    with pytest.raises(ValueError, match=r"give exactly one of name= .* or prefix="):
        NatsDeleteObjectsOperator(task_id="d", bucket="lake", **given)


def test_a_prefix_that_rendered_empty_deletes_nothing(nats_default: str, store) -> None:
    from airflow_natsobj.operators.object_store import NatsDeleteObjectsOperator

    store.put("keep", b"x")
    delete = NatsDeleteObjectsOperator(task_id="d", bucket=store.bucket, prefix="{{ nothing }}")
    delete.prefix = ""  # what the template rendered
    with pytest.raises(ValueError, match="prefix rendered empty; nothing was deleted"):
        delete.execute({})
    assert [info.name for info in store.list()] == ["keep"]


def _readers() -> dict[str, Any]:
    """The new operators that read objects, each built with its required parameters."""
    from airflow_natsobj.operators.copy import NatsCopyObjectOperator, NatsCopyPrefixOperator
    from airflow_natsobj.operators.transform import NatsFileTransformOperator

    return {
        "copy": lambda **o: NatsCopyObjectOperator(
            task_id="c", source_bucket_key="nats://b/a", dest_bucket_key="nats://b/c", **o
        ),
        "copy_prefix": lambda **o: NatsCopyPrefixOperator(
            task_id="p", source_bucket_prefix="nats://b/a", dest_bucket_prefix="nats://b/c", **o
        ),
        "transform": lambda **o: NatsFileTransformOperator(
            task_id="t",
            source_key="nats://b/a",
            dest_key="nats://b/c",
            transform_script="/bin/true",
            **o,
        ),
    }


@pytest.mark.parametrize("operator", ["copy", "copy_prefix", "transform"])
def test_the_read_option_is_the_tables(operator: str) -> None:
    """``allow_missing_digest`` reads as on ``NatsGetObjectOperator``: every spelling of the
    operation options table, and the table's Airflow default when not given."""
    from natsobj.operation_options import Face
    from tests.contract.cases import cases, defaults

    build = _readers()[operator]
    assert build().allow_missing_digest == defaults(Face.AIRFLOW, "get")["allow_missing_digest"]
    for case in cases(Face.AIRFLOW, "get"):
        built = build(**{case.option.spelled(Face.AIRFLOW): case.given})
        assert built.allow_missing_digest == case.expected, case.id
    with pytest.raises(ValueError, match="allow_missing_digest"):
        build(allow_missing_digest="a fortnight")


def test_a_copy_refuses_a_source_without_digest_unless_allowed(nats_default, store, raw) -> None:
    """The copy is the core's digest-checked one: it does not vouch for unchecked data."""
    from airflow_natsobj.operators.copy import NatsCopyObjectOperator, NatsCopyPrefixOperator

    from natsobj.errors import MissingDigest
    from tests.security.test_missing_digest_faces import CONTENT, strip_digest

    store.put("in/plain", CONTENT)
    strip_digest(raw, store.bucket, "in/plain")
    ends = {"source_bucket_name": store.bucket, "dest_bucket_name": store.bucket}
    strict = NatsCopyObjectOperator(
        task_id="s", source_bucket_key="in/plain", dest_bucket_key="out/plain", **ends
    )
    with pytest.raises(MissingDigest):
        strict.execute({})
    prefix = NatsCopyPrefixOperator(
        task_id="p", source_bucket_prefix="in/", dest_bucket_prefix="out/", **ends
    )
    with pytest.raises(MissingDigest):
        prefix.execute({})
    assert [info.name for info in store.list()] == ["in/plain"]
    lenient = NatsCopyObjectOperator(
        task_id="l",
        source_bucket_key="in/plain",
        dest_bucket_key="out/plain",
        allow_missing_digest="on",
        **ends,
    )
    copied = lenient.execute({})
    assert store.get_bytes("out/plain") == CONTENT
    assert copied["digest"] == store.get_info("out/plain").digest  # the copy has one now
