"""The natsobj example pipeline as Dagster assets, every artifact in one NATS object store.

The same job as the Airflow example (logic in example_dags/bike_trips.py):

    raw_trips       a realistic, dirty day of bike-share trips as CSV, stored as-is at
                    nats://demo/dagster/raw/trips/2024-06-01.csv
    trips_clean     Spark reads every raw CSV under dagster/raw/trips/ through the natsobj data
                    source (on the executors), parses and cleans -> Spark dataset
    trips_hourly    Spark aggregation of trips_clean -> Spark dataset
    trips_report    a two-panel PNG, stored at nats://demo/dagster/reports/trips.png
    artifact_index  where everything is, as asset metadata

The IO manager stores every asset; Spark datasets never pass through the driver. The sensor
``raw_trips_landed`` re-runs the Spark assets whenever a new CSV lands under
``dagster/raw/trips/`` (from anywhere: ``natsobj put``, Airflow, another team).

    dagster asset materialize -m example_dags.dagster_pipeline --select '*'
    dagster dev -m example_dags.dagster_pipeline        # UI + daemon, sensor running
"""

import os
from datetime import datetime
from typing import Any

from dagster import (
    Config,
    ConfigurableResource,
    DefaultSensorStatus,
    Definitions,
    MaterializeResult,
    asset,
    in_process_executor,
)
from pyspark.sql import DataFrame, SparkSession

from dagster_natsobj import (
    NatsObjectStoreIOManager,
    NatsObjectStoreResource,
    make_nats_object_sensor,
)
from example_dags import bike_trips
from natsobj.local.embedded_rule import resolve_server
from natsobj.spark import read_dataframe

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
PREFIX = "dagster"
RAW_PREFIX = f"{PREFIX}/raw/trips"
DAY = "2024-06-01"
GROUP = "natsobj_demo"


class RawTripsConfig(Config):
    rows: int = 30_000


class SparkSessionResource(ConfigurableResource):
    """The local Spark session (the run is in-process, so one JVM serves every step)."""

    def session(self) -> SparkSession:
        return bike_trips.spark_session("natsobj-dagster-demo")


@asset(
    group_name=GROUP,
    metadata={"natsobj/object": f"{RAW_PREFIX}/{DAY}.csv", "natsobj/content_type": "text/csv"},
)
def raw_trips(config: RawTripsConfig) -> bytes:
    """One day of trips as the operator exports them; bytes are stored as they are."""
    return bike_trips.trips_csv_bytes(datetime.fromisoformat(DAY), rows=config.rows)


@asset(group_name=GROUP, deps=[raw_trips])
def trips_clean(nats: NatsObjectStoreResource, spark: SparkSessionResource) -> DataFrame:
    """Every raw CSV, parsed and cleaned on the executors; stored as a Spark dataset."""
    files = read_dataframe(
        spark.session(),
        resolve_server(nats.settings()),
        BUCKET,
        RAW_PREFIX,
        layout="binary",
        glob=f"{RAW_PREFIX}/*.csv",
    )
    return bike_trips.clean_trips(files).repartition(2)


@asset(group_name=GROUP)
def trips_hourly(trips_clean: DataFrame) -> DataFrame:
    """Per day, hour, station and rider type; loaded and stored through the data source."""
    return bike_trips.hourly_summary(trips_clean)


@asset(
    group_name=GROUP,
    metadata={
        "natsobj/object": f"{PREFIX}/reports/trips.png",
        "natsobj/content_type": "image/png",
    },
)
def trips_report(trips_hourly: DataFrame) -> bytes:
    """Only the small aggregate reaches the driver, to draw the chart."""
    title = "Bike-share trips (natsobj + Spark + Dagster)"
    return bike_trips.render_report(trips_hourly.toPandas(), title)


@asset(group_name=GROUP, deps=[trips_report])
def artifact_index(nats: NatsObjectStoreResource) -> MaterializeResult:
    """Every object of the pipeline with its size, as asset metadata."""
    with nats.get_store(BUCKET) as store:
        infos = [i for i in store.list() if i.name.startswith(PREFIX + "/")]
    listing: dict[str, Any] = {f"nats://{BUCKET}/{i.name}": f"{i.size} B" for i in infos}
    return MaterializeResult(metadata={"objects": len(infos), "listing": listing})


raw_trips_landed = make_nats_object_sensor(
    "raw_trips_landed",
    BUCKET,
    target=[trips_clean, trips_hourly, trips_report],
    glob=f"{RAW_PREFIX}/*.csv",
    minimum_interval_seconds=10,
    default_status=DefaultSensorStatus.RUNNING,
)

nats = NatsObjectStoreResource(url=os.environ.get("NATS_URL", "embedded"))

defs = Definitions(
    assets=[raw_trips, trips_clean, trips_hourly, trips_report, artifact_index],
    sensors=[raw_trips_landed],
    resources={
        "nats": nats,
        "spark": SparkSessionResource(),
        "io_manager": NatsObjectStoreIOManager(resource=nats, bucket=BUCKET, prefix=PREFIX),
    },
    executor=in_process_executor,
)
