"""Pushed filters read only the row groups they keep: the part's footer through a ranged read,
then those row groups' column chunks, not the whole part.

Bytes are counted where they leave the server: a server of this module's own, with its
monitoring port, whose ``out_bytes`` (everything sent to every client) is read before and
after each query, so the count covers the Python workers Spark starts, whatever they fetch.
PySpark 4.0 pushes no filter: there the part is fetched whole, as without the option.
"""

from __future__ import annotations

import json

import natsobj
from natsobj.spark.pushdown import FILTERS_PUSHED
from tests.spark.served import served

CONF = "spark.sql.python.filterPushdown.enabled"
PREFIX = "lake/ranges"
GROUPS = 20
GROUP_ROWS = 20_000


def test_a_filter_keeping_one_row_group_in_twenty_reads_a_tenth_of_the_bytes(
    spark, monitored, bucket_name: str
) -> None:
    server, port = monitored
    options = {"url": server.url, "bucket": bucket_name}
    rows = spark.range(0, GROUPS * GROUP_ROWS, numPartitions=1).selectExpr(
        "id", "sha2(cast(id AS string), 256) AS digest", "rand(7) AS score"
    )
    rows.write.format("natsobj").mode("overwrite").options(
        **options, row_group_rows=str(GROUP_ROWS)
    ).save(PREFIX)
    condition = f"id >= {7 * GROUP_ROWS + 100} AND id < {7 * GROUP_ROWS + 600}"

    def query(pushdown: str) -> tuple[list[tuple], int]:
        before = served(port)
        frame = spark.read.format("natsobj").options(**options, pushdown=pushdown).load(PREFIX)
        found = sorted(tuple(r) for r in frame.filter(condition).collect())
        return found, served(port) - before

    spark.conf.set(CONF, "true")
    try:
        full, full_bytes = query("false")
        pushed, pushed_bytes = query("true")
    finally:
        spark.conf.unset(CONF)
    assert len(full) == 500 and [r[0] for r in full] == list(
        range(7 * GROUP_ROWS + 100, 7 * GROUP_ROWS + 600)
    )
    assert pushed == full
    print(f"\nserved: full scan {full_bytes} bytes, one row group of {GROUPS} {pushed_bytes}")
    if FILTERS_PUSHED:
        assert pushed_bytes <= full_bytes / 10, (pushed_bytes, full_bytes)
    else:
        with natsobj.connect(server.url) as client:
            manifest = client.store(bucket_name).get_bytes(f"{PREFIX}/_manifest.json")
        (part,) = json.loads(manifest)["parts"]
        assert pushed_bytes >= part["size"], (pushed_bytes, full_bytes)
