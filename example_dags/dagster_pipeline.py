"""The natsobj example pipeline as Dagster assets, every artifact in one NATS object store.

    raw_orders      realistic raw CSV (with the usual dirt), put as nats://demo/raw/orders/...
    orders_clean    Spark reads the raw CSV objects through the natsobj data source (binary
                    mode, on the executors), parses and cleans them -> a Spark dataset
    daily_revenue   Spark aggregation of orders_clean -> a Spark dataset
    revenue_report  a small PNG chart, put back as nats://demo/reports/daily_revenue.png

The sensor ``raw_orders_landed`` re-runs the Spark assets whenever a new CSV lands under
``raw/orders/`` (from anywhere: ``natsobj put``, Airflow, another team).

Run it against the embedded server:

    dagster asset materialize -m example_dags.dagster_pipeline --select '*'
    dagster dev -m example_dags.dagster_pipeline        # UI + daemon, sensor running
"""

import csv
import io
import os
import random
import sys
from datetime import date, datetime, timedelta
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
from pyspark.sql import functions as F

from dagster_natsobj import (
    NatsObjectStoreIOManager,
    NatsObjectStoreResource,
    make_nats_object_sensor,
)
from natsobj.spark import read_dataframe

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
RAW_PREFIX = "raw/orders"
REPORT_OBJECT = "reports/daily_revenue.png"
RAW_SCHEMA = (
    "order_id STRING, ordered_at STRING, customer_id STRING, country STRING, "
    "category STRING, sku STRING, quantity STRING, unit_price STRING, status STRING"
)

CATEGORIES = {
    "books": (4.0, 45.0),
    "electronics": (15.0, 900.0),
    "garden": (3.0, 120.0),
    "grocery": (0.5, 30.0),
    "toys": (5.0, 80.0),
}
COUNTRIES = ["DE", "FR", "NL", "NO", "PL", "ES", "IT", "SE"]


class RawOrdersConfig(Config):
    rows: int = 20_000
    month: str = "2024-06"


class SparkSessionResource(ConfigurableResource):
    """A local Spark session; one per process (the pipeline runs in-process)."""

    master: str = "local[2]"

    def session(self) -> SparkSession:
        # Python workers (and data source planning) must run this interpreter, which has natsobj.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        return (
            SparkSession.builder.master(self.master)
            .appName("natsobj-dagster-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )


def generate_orders(rows: int, start: date, seed: int = 7) -> bytes:
    """Orders as an upstream shop exports them: mixed-case countries, missing prices,
    duplicate lines, cancelled orders and the odd unparseable quantity."""
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "order_id",
            "ordered_at",
            "customer_id",
            "country",
            "category",
            "sku",
            "quantity",
            "unit_price",
            "status",
        ]
    )
    for i in range(rows):
        category = rng.choice(list(CATEGORIES))
        low, high = CATEGORIES[category]
        when = datetime.combine(start, datetime.min.time()) + timedelta(
            days=rng.randrange(28), seconds=rng.randrange(86_400)
        )
        country = rng.choice(COUNTRIES)
        price = f"{rng.uniform(low, high):.2f}"
        quantity = str(rng.choice([1, 1, 1, 2, 2, 3, 5]))
        if rng.random() < 0.02:
            price = ""
        if rng.random() < 0.01:
            quantity = "two"
        row = [
            f"o-{100000 + i}",
            when.isoformat(timespec="seconds"),
            f"c-{rng.randrange(5000):05d}",
            country.lower() if rng.random() < 0.1 else country,
            category,
            f"{category[:3].upper()}-{rng.randrange(400):04d}",
            quantity,
            price,
            rng.choices(["paid", "shipped", "cancelled"], weights=[60, 35, 5])[0],
        ]
        writer.writerow(row)
        if rng.random() < 0.01:
            writer.writerow(row)  # the export's at-least-once duplicates
    return out.getvalue().encode("utf-8")


@asset(
    group_name="natsobj_demo",
    metadata={
        "natsobj/object": f"{RAW_PREFIX}/orders-2024-06.csv",
        "natsobj/content_type": "text/csv",
    },
)
def raw_orders(config: RawOrdersConfig) -> bytes:
    """One month of shop orders as CSV, stored as-is (bytes are stored raw)."""
    return generate_orders(rows=config.rows, start=date.fromisoformat(config.month + "-01"))


@asset(group_name="natsobj_demo", deps=[raw_orders])
def orders_clean(nats: NatsObjectStoreResource, spark: SparkSessionResource) -> DataFrame:
    """Every CSV under raw/orders/, parsed and cleaned on the executors."""
    session = spark.session()
    files = read_dataframe(
        session, nats.settings().resolved(), BUCKET, RAW_PREFIX, mode="binary", glob="*.csv"
    )
    lines = files.select(
        F.explode(F.split(F.decode(F.col("content"), "UTF-8"), "\n")).alias("line")
    ).where((F.col("line") != "") & ~F.col("line").startswith("order_id,"))
    parsed = lines.select(F.from_csv("line", RAW_SCHEMA).alias("r")).select("r.*")
    return (
        parsed.dropDuplicates(["order_id"])
        .withColumn("country", F.upper("country"))
        .withColumn("quantity", F.col("quantity").try_cast("int"))
        .withColumn("unit_price", F.col("unit_price").try_cast("double"))
        .withColumn("ordered_at", F.to_timestamp("ordered_at"))
        .where(F.col("quantity").isNotNull() & F.col("unit_price").isNotNull())
        .where(F.col("status") != "cancelled")
        .withColumn("revenue", F.round(F.col("quantity") * F.col("unit_price"), 2))
        .repartition(2)  # two executor tasks, two Parquet parts
    )


@asset(group_name="natsobj_demo")
def daily_revenue(orders_clean: DataFrame) -> DataFrame:
    """Revenue per day and category (loaded back through the data source, never collected)."""
    return (
        orders_clean.groupBy(F.to_date("ordered_at").alias("day"), "category")
        .agg(F.round(F.sum("revenue"), 2).alias("revenue"), F.count("*").alias("orders"))
        .orderBy("day", "category")
    )


@asset(
    group_name="natsobj_demo",
    metadata={"natsobj/object": REPORT_OBJECT, "natsobj/content_type": "image/png"},
)
def revenue_report(daily_revenue: DataFrame) -> bytes:
    """A small PNG chart; only the aggregate (28 days x 5 categories) reaches the driver."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = daily_revenue.toPandas().pivot(index="day", columns="category", values="revenue")
    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    frame.plot.area(ax=ax, linewidth=0)
    ax.set_title("Daily revenue by category (natsobj demo)")
    ax.set_xlabel("")
    ax.set_ylabel("EUR")
    ax.legend(loc="upper left", ncol=5, fontsize="small")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


@asset(group_name="natsobj_demo", deps=[revenue_report])
def artifact_index(nats: NatsObjectStoreResource) -> MaterializeResult:
    """Where everything landed, as asset metadata (and in the demo script's output)."""
    with nats.get_store(BUCKET) as store:
        infos = store.list()
    listing: dict[str, Any] = {
        f"nats://{BUCKET}/{info.name}": f"{info.size} bytes" for info in infos
    }
    return MaterializeResult(metadata={"objects": len(infos), "listing": listing})


raw_orders_landed = make_nats_object_sensor(
    "raw_orders_landed",
    BUCKET,
    asset_selection=[orders_clean, daily_revenue, revenue_report],
    name_glob=f"{RAW_PREFIX}/*.csv",
    minimum_interval_seconds=10,
    default_status=DefaultSensorStatus.RUNNING,
)

nats = NatsObjectStoreResource(url=os.environ.get("NATS_URL", "embedded"))

defs = Definitions(
    assets=[raw_orders, orders_clean, daily_revenue, revenue_report, artifact_index],
    sensors=[raw_orders_landed],
    resources={
        "nats": nats,
        "spark": SparkSessionResource(),
        "io_manager": NatsObjectStoreIOManager(resource=nats, bucket=BUCKET, prefix="dagster"),
    },
    executor=in_process_executor,  # one Spark JVM for the whole run
)
