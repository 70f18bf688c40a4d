#!/usr/bin/env bash
# The Dagster half of `make demo`: materialize every asset of example_dags/dagster_pipeline.py
# against the embedded NATS server, then show where the artifacts are.
set -euo pipefail
cd "$(dirname "$0")/.."
export NATSOBJ_DATA_DIR="${NATSOBJ_DATA_DIR:-$PWD/.natsobj}"
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.demo/dagster_home}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v python)}"
mkdir -p "$DAGSTER_HOME" .demo
BUCKET="${NATSOBJ_DEMO_BUCKET:-demo}"

echo "== Dagster: materializing all assets of example_dags.dagster_pipeline (embedded NATS)"
dagster asset materialize -m example_dags.dagster_pipeline --select '*' >.demo/dagster.log 2>&1 || {
    tail -n 60 .demo/dagster.log
    echo "dagster asset materialize failed; full log in .demo/dagster.log" >&2
    exit 1
}
grep -E "STEP_SUCCESS|RUN_SUCCESS" .demo/dagster.log | sed -E 's/^.* - ([A-Z_]+) - /  \1 /'

echo
echo "== Dagster's artifacts in nats://$BUCKET (embedded server, data in $NATSOBJ_DATA_DIR)"
python - "$BUCKET" <<'PY'
import json
import sys

import natsobj

bucket = sys.argv[1]
with natsobj.connect("embedded") as client:
    store = client.store(bucket)
    infos = sorted((i for i in store.list() if i.name.startswith("dagster/")), key=lambda i: i.name)
    datasets = [i.name[: -len("/_manifest.json")] for i in infos if i.name.endswith("/_manifest.json")]
    for prefix in datasets:
        manifest = json.loads(store.get_bytes(f"{prefix}/_manifest.json"))
        print(
            f"  nats://{bucket}/{prefix}/  Spark dataset: {manifest['num_rows']:,} rows in "
            f"{manifest['num_parts']} Parquet part(s), {manifest['num_bytes']:,} B"
        )
    for info in infos:
        if not any(info.name.startswith(p + "/") for p in datasets):
            kind = info.headers.get("Content-Type", ["?"])[0]
            print(f"  nats://{bucket}/{info.name}  {info.size:,} B  {kind}")
    store.get_file("dagster/reports/trips.png", ".demo/dagster_trips.png")
PY
echo
echo "Report chart copied to .demo/dagster_trips.png (object nats://$BUCKET/dagster/reports/trips.png)."
echo "Browse: natsobj ls $BUCKET dagster/   |   UI + sensor: dagster dev -m example_dags.dagster_pipeline"
