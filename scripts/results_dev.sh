#!/usr/bin/env bash
# The sweep behind docs/results.md: every agent with the embedded SmolLM2 on the dev split of
# two TextWorldExpress games, two ScienceWorld tasks and two ALFWorld-engine task types.
# Usage: scripts/results_dev.sh AGENT [EPISODES] [MAX_STEPS]   (resumable: rerun to continue)
set -euo pipefail
cd "$(dirname "$0")/.."
export TORCH_COMPILE_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
agent=${1:?agent}
episodes=${2:-2}
max_steps=${3:-15}
envs="twx:coin,twx:mapreader,scienceworld:find-living-thing,scienceworld:boil,alfworld:pick_and_place,alfworld:look_at_obj_in_light"
.venv/bin/smcplan eval --env "$envs" --agent "$agent" --split dev --episodes "$episodes" \
  --max-steps "$max_steps" --seed 0 --out "runs/dev-$agent" --no-progress
