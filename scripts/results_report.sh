#!/usr/bin/env bash
# Render the tables of docs/results.md from the sweep runs of scripts/results_dev_llm.sh:
# every agent at 8 steps, Reflexion with 2 trials (runs/dev-llm-reflexion-t2) when that run exists
# (with one trial Reflexion is ReAct by construction).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=()
for agent in random react reflexion zeroshot nesyfs rlaw rlvmr; do
  d="runs/dev-llm-$agent"
  [ "$agent" = reflexion ] && [ -d "$d-t2" ] && d="$d-t2"
  [ -d "$d" ] && runs+=("$d")
done
.venv/bin/smcplan report "${runs[@]}" --out runs/report-dev
.venv/bin/python scripts/results_pooled.py "${runs[@]}" > runs/report-dev/pooled.md
