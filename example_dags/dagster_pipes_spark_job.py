"""The PySpark job of example_dags/dagster_pipes_spark.py, launched by ``spark-submit``.

It imports dagster-pipes, natsobj and PySpark, never Dagster: the context comes from NATS
(``PipesNatsContextLoader``), and its logs, the materialization and the asset check go back
through NATS (``PipesNatsMessageWriter``). The server is ``NATS_URL``'s, as for every natsobj
client.
"""

from dagster_pipes import open_dagster_pipes
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from natsobj.pipes import PipesNatsContextLoader, PipesNatsMessageWriter
from natsobj.spark import write_dataframe

TRIPS = 20_000


def main() -> None:
    with open_dagster_pipes(
        context_loader=PipesNatsContextLoader(),
        message_writer=PipesNatsMessageWriter(interval=1),
    ) as pipes:
        bucket, dataset = pipes.get_extra("bucket"), pipes.get_extra("dataset")
        spark = SparkSession.builder.appName("natsobj-pipes-demo").getOrCreate()
        trips = spark.range(TRIPS, numPartitions=2).select(
            (F.col("id") % 24).alias("hour"),
            (F.col("id") * 7919 % 3000 + 60).alias("duration_s"),
        )
        hourly = trips.groupBy("hour").agg(
            F.count("*").alias("trips"),
            F.avg("duration_s").alias("mean_duration_s"),
            F.min("duration_s").alias("min_duration_s"),
        )
        rows = hourly.collect()  # 24 rows: the check needs no second pass over the trips
        manifest = write_dataframe(
            spark.createDataFrame(rows, hourly.schema).coalesce(1),
            None,
            bucket,
            dataset,
            mode="overwrite",
        )
        pipes.log.info(f"wrote {manifest['num_rows']} hourly rows to nats://{bucket}/{dataset}")
        shortest = min(row.min_duration_s for row in rows)
        pipes.report_asset_materialization(
            metadata={
                "num_rows": manifest["num_rows"],
                "num_parts": manifest["num_parts"],
                "trips": TRIPS,
                "dataset": {"raw_value": f"nats://{bucket}/{dataset}", "type": "url"},
            }
        )
        pipes.report_asset_check(
            check_name="durations_positive",
            passed=shortest > 0,
            metadata={"shortest_trip_s": shortest},
        )
        spark.stop()


if __name__ == "__main__":
    main()
