#!/usr/bin/env bash
# Render the tables of docs/results.md from the sweep runs (scripts/results_dev*.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=(runs/dev-random)
for d in runs/dev-llm-*; do [ -d "$d" ] && runs+=("$d"); done
.venv/bin/smcplan report "${runs[@]}" --out runs/report-dev
