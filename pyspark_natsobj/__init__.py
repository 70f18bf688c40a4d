"""Found by PySpark's data source auto-discovery (top-level modules named ``pyspark_*`` that
define ``DefaultSource``), so ``format("natsobj")`` works without ``natsobj.spark.register``."""

from natsobj.spark.source import NatsObjDataSource as DefaultSource

__all__ = ["DefaultSource"]
