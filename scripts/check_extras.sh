#!/usr/bin/env bash
# What `pip install natsobj[EXTRA]` would install into a clean virtualenv (a resolver dry run):
#   scripts/check_extras.sh airflow dagster
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
uv venv -q "$work/venv" --python 3.11
for extra in "${@:-airflow}"; do
  planned="$(uv pip install --dry-run --python "$work/venv/bin/python" "$root[$extra]" 2>&1 \
    | sed -n 's/^ + //p')"
  echo "natsobj[$extra]: $(echo "$planned" | wc -l) packages"
  echo "$planned" | grep -E '^(pyspark|matplotlib|py4j|apache-airflow|dagster|polars)==' \
    | sed 's/^/  /' || true
done
