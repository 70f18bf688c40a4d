#!/usr/bin/env bash
# `make demo`: the main job against an embedded NATS server that it starts itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export NATSOBJ_DATA_DIR="${NATSOBJ_DATA_DIR:-$PWD/.natsobj}"
python scripts/roundtrip.py
