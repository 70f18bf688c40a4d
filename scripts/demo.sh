#!/usr/bin/env bash
# `make demo`: the example PySpark pipeline, run by Airflow (`airflow dags test`) and then by
# Dagster (`dagster asset materialize`), against the embedded NATS server each step asks for
# explicitly (url "embedded"; natsobj never starts one without being asked);
# then the watch-driven streaming example (example_dags/streaming_landing.py); it ends by
# listing the artifacts with the natsobj CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
export NATSOBJ_DATA_DIR="${NATSOBJ_DATA_DIR:-$PWD/.natsobj}"
export NATSOBJ_DEMO_BUCKET="${NATSOBJ_DEMO_BUCKET:-demo}"
# The streaming query's checkpoint lives beside the data it points into: removing the data
# directory (a new bucket, new sequences) removes the checkpoint with it.
export NATSOBJ_DEMO_CHECKPOINT="${NATSOBJ_DEMO_CHECKPOINT:-$NATSOBJ_DATA_DIR/demo-stream-checkpoint}"

bash example_dags/demo_airflow.sh
echo
bash example_dags/demo_dagster.sh
echo
echo "== Streaming: landing/*.csv -> Structured Streaming -> $NATSOBJ_DEMO_BUCKET/streaming/trips -> Dagster sensor -> report"
PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v python)}" python -m example_dags.streaming_landing >.demo/streaming.log 2>&1 || {
    tail -n 60 .demo/streaming.log
    echo "the streaming example failed; full log in .demo/streaming.log" >&2
    exit 1
}
grep -E "^  (landed|stream|sensor|report):? " .demo/streaming.log
echo "Streaming log: .demo/streaming.log   |   Reports: natsobj ls $NATSOBJ_DEMO_BUCKET streaming/reports/"
echo
echo "== natsobj ls -r $NATSOBJ_DEMO_BUCKET   (the embedded server the demo asked for keeps running: natsobj ls, get, watch ...; natsobj serve --stop ends it, natsobj serve --list shows yours)"
natsobj ls -r "$NATSOBJ_DEMO_BUCKET"
