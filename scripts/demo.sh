#!/usr/bin/env bash
# `make demo`: the example PySpark pipeline, run by Airflow (`airflow dags test`) and then by
# Dagster (`dagster asset materialize`), against an embedded NATS server started on demand;
# it ends by listing the artifacts with the natsobj CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
export NATSOBJ_DATA_DIR="${NATSOBJ_DATA_DIR:-$PWD/.natsobj}"
export NATSOBJ_DEMO_BUCKET="${NATSOBJ_DEMO_BUCKET:-demo}"

bash example_dags/demo_airflow.sh
echo
bash example_dags/demo_dagster.sh
echo
echo "== natsobj ls -r $NATSOBJ_DEMO_BUCKET   (the embedded server keeps running: natsobj ls, get, watch ...)"
natsobj ls -r "$NATSOBJ_DEMO_BUCKET"
