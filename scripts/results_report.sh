#!/usr/bin/env bash
# Render the tables of docs/results.md from the sweep runs of scripts/results_dev_llm.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=()
for d in runs/dev-llm-*; do [ -d "$d" ] && runs+=("$d"); done
.venv/bin/smcplan report "${runs[@]}" --out runs/report-dev
