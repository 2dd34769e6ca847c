#!/usr/bin/env bash
# The LLM-agent sweep of docs/results.md, sized to the CPU budget of a session: each LLM agent
# with the embedded SmolLM2 on the dev split of the same six environments as results_dev.sh
# (two TextWorldExpress games, two ScienceWorld tasks, two ALFWorld-engine task types),
# EPISODES episodes per environment (default 1), 8 steps each. TRIALS=k (default 1) gives every
# lost episode k-1 more trials with the same agent (Reflexion's setting); the run then goes to
# runs/dev-llm-AGENT-tk.
# Usage: [TRIALS=k] scripts/results_dev_llm.sh [EPISODES] [AGENT ...]   (resumable: rerun to
# continue; raising EPISODES later only runs the new episodes)
set -euo pipefail
cd "$(dirname "$0")/.."
export TORCH_COMPILE_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
episodes=${1:-1}
shift || true
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(random react nesyfs rlvmr rlaw reflexion zeroshot)
envs="twx:coin,twx:mapreader,scienceworld:find-living-thing,scienceworld:boil,alfworld:pick_and_place,alfworld:look_at_obj_in_light"
trials=${TRIALS:-1}
for agent in "${agents[@]}"; do
  out="runs/dev-llm-$agent"
  [ "$trials" -gt 1 ] && out="$out-t$trials"
  .venv/bin/smcplan eval --env "$envs" --agent "$agent" --split dev --episodes "$episodes" \
    --max-steps 8 --trials "$trials" --seed 0 --out "$out" --no-progress
done
