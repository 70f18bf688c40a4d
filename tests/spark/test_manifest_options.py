"""The manifest's generation and retention rules, and option parsing, without Spark."""

from __future__ import annotations

from datetime import timedelta

import pytest

from natsobj.local.embedded import running_server
from natsobj.settings import ConnectionSettings
from natsobj.spark import BadSparkOption, SchemaMismatch, spark_options
from natsobj.spark.manifest import Manifest, Part, is_data_object, merge_schemas, next_generation
from natsobj.spark.options import BUCKET_DESCRIPTION, SourceOptions
from natsobj.store_config import Placement, StoreConfig

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False}]}


def _parts(*names: str) -> list[Part]:
    return [Part(n, 1, 10, "SHA-256=x") for n in names]


def _commit(previous, names, *, overwrite, retain=1):
    return next_generation(
        previous,
        prefix="p",
        schema=SCHEMA,
        parts=_parts(*names),
        overwrite=overwrite,
        write_id="w",
        retain=retain,
    )


def test_generations_retain_superseded_parts_for_the_configured_number_of_commits() -> None:
    g1, doomed = _commit(None, ["a"], overwrite=True)
    assert (g1.generation, doomed) == (1, [])
    g2, doomed = _commit(g1, ["b"], overwrite=False)
    assert [p.name for p in g2.parts] == ["a", "b"] and doomed == []
    g3, doomed = _commit(g2, ["c"], overwrite=True)
    assert [p.name for p in g3.parts] == ["c"] and doomed == []
    assert [(r.generation, r.parts) for r in g3.retained] == [(2, ("a", "b"))]
    g4, doomed = _commit(g3, ["d"], overwrite=False)
    assert doomed == ["a", "b"] and g4.retained == ()
    g5, doomed = _commit(g4, ["e"], overwrite=True, retain=0)
    assert doomed == ["c", "d"] and g5.num_rows == 1


def test_retain_two_keeps_two_superseded_generations() -> None:
    g1, _ = _commit(None, ["a"], overwrite=True, retain=2)
    g2, _ = _commit(g1, ["b"], overwrite=True, retain=2)
    g3, doomed = _commit(g2, ["c"], overwrite=True, retain=2)
    assert doomed == [] and [r.generation for r in g3.retained] == [2, 1]
    g4, doomed = _commit(g3, ["d"], overwrite=True, retain=2)
    assert doomed == ["a"] and [r.generation for r in g4.retained] == [3, 2]


def test_manifest_json_round_trips_and_rejects_foreign_json() -> None:
    manifest, _ = _commit(None, ["a", "b"], overwrite=True)
    doc = manifest.as_dict()
    assert doc["num_rows"] == 2 and doc["num_parts"] == 2 and doc["schema"] == SCHEMA
    assert Manifest.from_json(manifest.to_json(), bucket="b", name="p/_manifest.json") == manifest
    with pytest.raises(Exception, match="not a natsobj Spark manifest"):
        Manifest.from_json(b'{"hello": 1}', bucket="b", name="p/_manifest.json")


def test_append_widens_nullability_and_refuses_other_types() -> None:
    nullable_array = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {
                "name": "xs",
                "type": {"type": "array", "elementType": "long", "containsNull": True},
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    strict = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {
                "name": "xs",
                "type": {"type": "array", "elementType": "long", "containsNull": False},
                "nullable": False,
                "metadata": {},
            },
        ],
    }
    assert merge_schemas(strict, nullable_array, where="p") == nullable_array
    other = {"type": "struct", "fields": [{"name": "id", "type": "string", "nullable": True}]}
    with pytest.raises(SchemaMismatch, match="dataset has columns id long, xs array"):
        merge_schemas(strict, other, where="p")


def test_listing_skips_hidden_and_non_parquet_objects() -> None:
    assert is_data_object("d", "d/part-1.parquet")
    assert is_data_object("d", "d/year=2024/part-1.parquet")
    assert not is_data_object("d", "d/_manifest.json")
    assert not is_data_object("d", "d/_tmp/part-1.parquet")
    assert not is_data_object("d", "d/.staging/x.parquet")
    assert not is_data_object("d", "dx/part-1.parquet")


def test_options_parse_defaults_and_keep_secrets_out_of_repr(isolated_cwd) -> None:
    opts = SourceOptions.parse(
        {
            "URL": "nats://h:4222",
            "bucket": "lake",
            "path": "/sales/daily/",
            "password": "s3cret",
            "user": "u",
            "rows_per_object": "1_000",
        }
    )
    assert opts.prefix == "sales/daily" and opts.rows_per_object == 1000
    assert opts.settings.servers == ["nats://h:4222"] and opts.settings.password == "s3cret"
    assert "s3cret" not in repr(opts)
    with pytest.raises(BadSparkOption, match="disagree"):
        SourceOptions.parse({"bucket": "b", "path": "a", "prefix": "b"})
    with pytest.raises(BadSparkOption, match="retain_generations"):
        SourceOptions.parse({"bucket": "b", "path": "a", "retain_generations": "-1"})
    # flags take the vocabulary every face reads, and refuse what is neither
    flags = SourceOptions.parse(
        {
            "url": "nats://h:4222",
            "bucket": "b",
            "path": "a",
            "pushdown": "off",
            "create_bucket": "On",
        }
    )
    assert flags.pushdown is False and flags.create_bucket is True
    with pytest.raises(BadSparkOption, match="'pushdown' must be true or false"):
        SourceOptions.parse({"bucket": "b", "path": "a", "pushdown": "maybe"})
    # options refused before they name a server leave the embedded one (the default) unstarted
    assert running_server(isolated_cwd / ".natsobj") is None


def test_spark_options_carry_credentials_as_separate_options() -> None:
    settings = ConnectionSettings.from_url("nats://alice:pw@h1:4222,h2:4222?domain=hub")
    out = spark_options(settings, "lake", "sales", rows_per_object=10, create_bucket=False)
    assert out["url"] == "nats://h1:4222,h2:4222"  # no credentials inside the URL
    assert (out["user"], out["password"], out["domain"]) == ("alice", "pw", "hub")
    assert out["rows_per_object"] == "10" and out["create_bucket"] == "false"
    assert SourceOptions.parse(out).settings == settings


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("bucket_replica", "3", "known: .*'bucket_replicas'"),
        ("bucket_replicas", "three", "'bucket_replicas'"),
        ("bucket_ttl", "soon", "'bucket_ttl'.*duration"),
        ("bucket_placement", "ssd", "'bucket_placement'.*JSON object"),
        ("bucket_storage", "disk", "'bucket_storage'"),
    ],
)
def test_bad_bucket_options_fail_on_the_driver_naming_the_option(
    isolated_cwd, option, value, says
) -> None:
    with pytest.raises(BadSparkOption, match=says):
        SourceOptions.parse({"bucket": "b", "path": "a", option: value})
    assert running_server(isolated_cwd / ".natsobj") is None  # refused before any server


def test_bucket_options_from_python_values_are_what_the_bucket_is_created_with() -> None:
    out = spark_options(
        "nats://h:4222",
        "lake",
        "sales",
        bucket_ttl=timedelta(days=7),
        bucket_placement={"tags": ["ssd"]},
        bucket_replicas=3,
    )
    config = SourceOptions.parse(out).bucket_config
    assert (config.ttl, config.placement, config.replicas) == (
        timedelta(days=7),
        Placement(tags=("ssd",)),
        3,
    )
    assert config.description == BUCKET_DESCRIPTION  # the default when none is given
    no_options = SourceOptions.parse({"bucket": "lake", "path": "sales", "url": "nats://h:4222"})
    assert no_options.bucket_config == StoreConfig("lake", description=BUCKET_DESCRIPTION)
