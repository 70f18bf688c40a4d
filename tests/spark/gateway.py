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
    """Stop the SparkSession (or bare SparkContext) there is, and shut its py4j gateway down.
    Idempotent, and the one teardown of every fixture that makes a session: the Spark and
    Dagster tests share one session (``getOrCreate``), and a second ``session.stop()`` after
    the gateway is gone fails with ConnectionRefusedError."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    if gateway is None:
        return
    session = SparkSession._instantiatedSession
    if session is not None:
        session.stop()
    elif SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    del gateway
    gc.collect()
    # a connection some object still holds is closed already; what its finalizer says at exit
    # would only meet closed streams
    logging.getLogger("py4j").setLevel(logging.WARNING)
