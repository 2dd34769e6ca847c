"""bench/grpo_iteration.py on the tiny model: all three paths measured, every cost finite, > 0."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _numbers(value):
    """Every int or float in ``value`` (nested dicts and lists; booleans are not numbers)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def test_grpo_iteration_bench_times_rollouts_and_update_of_every_path(tmp_path):
    out = tmp_path / "grpo_iteration.json"
    cmd = [sys.executable, str(ROOT / "bench" / "grpo_iteration.py"), "--model", "tiny",
           "--group-size", "2", "--max-steps", "2", "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "extrapolation" in done.stdout and "8x25" in done.stdout
    result = json.loads(out.read_text())
    assert result["benchmark"] == "grpo_iteration"
    assert result["config"]["group_size"] == 2 and result["config"]["max_steps"] == 2
    assert all(math.isfinite(x) for x in _numbers(result))  # NaN/inf nowhere
    extra = result["extrapolation"]
    assert extra["target_total_steps"] == 8 * 25 and "extrapolation" in extra["note"]
    assert set(result["paths"]) == {"lora", "head", "head_task"}
    for name, path in result["paths"].items():
        steps = path["rollouts"]["steps"]
        assert 2 <= steps <= 4, name  # 2 episodes of at most 2 steps, each at least one
        assert path["update"]["steps"] == steps == extra["measured_steps"][name]["rollouts"]
        measured = [path[k] for k in ("rollouts", "update", "estimate", "setup", "peak_rss_mib")]
        assert all(x > 0 for x in _numbers(measured)), (name, measured)
        est = path["estimate"]
        per_step = path["rollouts"]["wall_s_per_step"] + path["update"]["wall_s_per_step"]
        assert math.isclose(est["iteration_wall_s"], per_step * 200)
    for name in ("head", "head_task"):
        cache = result["paths"][name]["feature_cache"]
        assert cache["hits"] > 0 and cache["misses"] > 0  # the 2 episodes share the first state
    assert result["lora_over_head_iteration_wall"] > 0
    assert set(result["iteration_wall_ratios"]) == {
        "lora_over_head",
        "lora_over_head_task",
        "head_over_head_task",
    }
