"""Stopping Spark's py4j gateway before the interpreter exits.

A stopped SparkSession leaves the gateway's connections open; the interpreter collects them
at exit, after pytest has closed the streams its log capture wrote to, and each one's
finalizer logs "Closing down clientserver connection": a ``--- Logging error ---`` traceback
after a green run's summary. Closing them while logging still works, and collecting them
then, leaves nothing for exit."""

from __future__ import annotations

import gc
import logging
import sys


def stop_spark_gateway() -> None:
    """Stop the active SparkContext, if any, and shut its py4j gateway down (idempotent)."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    del gateway
    gc.collect()
    # a connection some object still holds is closed already; what its finalizer says at exit
    # would only meet closed streams
    logging.getLogger("py4j").setLevel(logging.WARNING)
