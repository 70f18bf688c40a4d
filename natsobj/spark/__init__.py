"""Spark DataFrames in and out of the NATS object store, partition by partition on executors.

``format("natsobj")`` is a PySpark 4 Python data source; ``write_dataframe``/``read_dataframe``
are the one-call helpers the Dagster and Airflow front ends use. See docs/spark.md.
"""

from natsobj.extras import require_extra

require_extra("spark", "natsobj.spark")

from natsobj.spark.errors import (
    BadSparkOption,
    CatalogTableUnsupported,
    DatasetChanged,
    DatasetExists,
    DatasetNotFound,
    SchemaMismatch,
)
from natsobj.spark.frames import read_dataframe, register, spark_options, write_dataframe
from natsobj.spark.source import FORMAT_NAME, NatsObjDataSource
from natsobj.spark.storage import NoManifestWarning

__all__ = [
    "FORMAT_NAME",
    "BadSparkOption",
    "CatalogTableUnsupported",
    "DatasetChanged",
    "DatasetExists",
    "DatasetNotFound",
    "NatsObjDataSource",
    "NoManifestWarning",
    "SchemaMismatch",
    "read_dataframe",
    "register",
    "spark_options",
    "write_dataframe",
]
