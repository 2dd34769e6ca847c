#!/usr/bin/env bash
# The reduced LLM-agent sweep of docs/results.md (CPU budget of one session): each LLM agent with
# the embedded SmolLM2, one dev episode of twx:coin and of alfworld:pick_and_place, 8 steps.
# Usage: scripts/results_dev_llm.sh [AGENT ...]   (resumable: rerun to continue)
set -euo pipefail
cd "$(dirname "$0")/.."
export TORCH_COMPILE_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(react nesyfs rlvmr rlaw reflexion zeroshot)
for agent in "${agents[@]}"; do
  .venv/bin/smcplan eval --env twx:coin,alfworld:pick_and_place --agent "$agent" --split dev \
    --episodes 1 --max-steps 8 --seed 0 --out "runs/dev-llm-$agent" --no-progress
done
