#!/usr/bin/env bash
# The Airflow half of `make demo`: run the PySpark pipeline DAG (example_dags/airflow_pipeline.py)
# with `airflow dags test` against the embedded NATS server, then show where the artifacts are.
set -euo pipefail
cd "$(dirname "$0")/.."
export NATSOBJ_DATA_DIR="${NATSOBJ_DATA_DIR:-$PWD/.natsobj}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$PWD/.demo/airflow_home}"
export AIRFLOW__CORE__DAGS_FOLDER="$PWD/example_dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v python)}"
# nats_default: the embedded server of this data directory (an absolute path, so every task
# process finds the same server).
export AIRFLOW_CONN_NATS_DEFAULT="{\"conn_type\": \"nats\", \"extra\": {\"embedded_dir\": \"$NATSOBJ_DATA_DIR\"}}"
BUCKET="${NATSOBJ_DEMO_BUCKET:-demo}"
export NATSOBJ_DEMO_BUCKET="$BUCKET"
mkdir -p "$AIRFLOW_HOME" .demo

airflow db migrate >.demo/airflow_db.log 2>&1 || {
    tail -n 40 .demo/airflow_db.log
    echo "airflow db migrate failed; full log in .demo/airflow_db.log" >&2
    exit 1
}

echo "== Airflow: airflow dags test airflow_pipeline (embedded NATS, data in $NATSOBJ_DATA_DIR)"
airflow dags test airflow_pipeline -f "$PWD/example_dags/airflow_pipeline.py" >.demo/airflow.log 2>&1 || {
    tail -n 60 .demo/airflow.log
    echo "airflow dags test failed; full log in .demo/airflow.log" >&2
    exit 1
}
grep -oE "\[DAG TEST\] end task task_id=[a-z_]+" .demo/airflow.log | sed -E 's/.*task_id=/  done: /'
grep -q "running trigger in line" .demo/airflow.log && echo "  (wait_for_result deferred to the NATS watch trigger)"

echo
echo "== Artifacts in nats://$BUCKET (Airflow run)"
grep -oE "ARTIFACT .*" .demo/airflow.log | sed -E 's/^ARTIFACT +/  /'
python - "$BUCKET" <<'PY'
import sys

import natsobj

bucket = sys.argv[1]
with natsobj.connect("embedded") as client:
    store = client.store(bucket)
    reports = sorted(
        (i for i in store.list() if i.name.startswith("airflow/reports/")),
        key=lambda i: i.sequence or 0,
    )
    store.get_file(reports[-1].name, ".demo/airflow_report.png")
    print(f"\nReport chart copied to .demo/airflow_report.png (object nats://{bucket}/{reports[-1].name}).")
PY
echo "Run log: .demo/airflow.log   |   Browse: natsobj ls $BUCKET airflow/"
echo "Event-driven DAG: see docs/airflow.md (airflow scheduler + airflow triggerer)."
