"""Dagster Pipes over NATS: an asset that ``spark-submit``s a PySpark job, which reports its
logs, the asset's materialization metadata and an asset check back through the object store.

    trips_hourly_pipes   spark-submit example_dags/dagster_pipes_spark_job.py: Spark aggregates
                         a day of trips and writes the result as a natsobj dataset at
                         nats://demo/dagster/pipes/trips_hourly; the job reports the row and part
                         counts and the check ``durations_positive``

The Dagster side is ``dagster_natsobj.PipesNatsContextInjector`` and
``PipesNatsMessageReader`` on ``PipesSubprocessClient``; the job uses
``natsobj.pipes.PipesNatsContextLoader`` and ``PipesNatsMessageWriter`` and needs only
dagster-pipes, natsobj and PySpark (no Dagster). Both sides reach the server through
``NATS_URL`` (default: the embedded server of this directory); the job inherits it.

    dagster asset materialize -m example_dags.dagster_pipes_spark --select trips_hourly_pipes
"""

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    Definitions,
    PipesSubprocessClient,
    asset,
)

from dagster_natsobj import (
    NatsObjectStoreResource,
    PipesNatsContextInjector,
    PipesNatsMessageReader,
)

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
DATASET = "dagster/pipes/trips_hourly"
JOB = Path(__file__).with_name("dagster_pipes_spark_job.py")
CHECK = "durations_positive"
SPARK_CONF = ("--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2")


def spark_submit() -> str:
    """The ``spark-submit`` of this environment's PySpark, else the first on ``PATH``."""
    found = shutil.which("spark-submit", path=str(Path(sys.executable).parent))
    return found or shutil.which("spark-submit") or "spark-submit"


@asset(check_specs=[AssetCheckSpec(CHECK, asset="trips_hourly_pipes")])
def trips_hourly_pipes(
    context: AssetExecutionContext, nats: NatsObjectStoreResource
) -> Iterator[Any]:
    """Hourly trip counts, computed by a Spark job that Dagster launches and hears from."""
    client = PipesSubprocessClient(
        context_injector=PipesNatsContextInjector(bucket=BUCKET, resource=nats),
        message_reader=PipesNatsMessageReader(bucket=BUCKET, resource=nats, interval=1),
    )
    yield from client.run(
        context=context,
        command=[spark_submit(), "--master", "local[2]", *SPARK_CONF, str(JOB)],
        extras={"bucket": BUCKET, "dataset": DATASET},
        # the job's driver and workers run this interpreter, which has natsobj and dagster-pipes
        env={"PYSPARK_PYTHON": sys.executable},
    ).get_results()


defs = Definitions(
    assets=[trips_hourly_pipes],
    resources={"nats": NatsObjectStoreResource(url=os.environ.get("NATS_URL", "embedded"))},
)
