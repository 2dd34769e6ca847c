"""Layering: memory imports no torch/transformers/outlines/jax and no higher or sibling layer."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("torch", "transformers", "outlines", "jax", "jaxlib", "numpyro", "smcplan.llm",
             "smcplan.envs", "smcplan.planning", "smcplan.agents", "textworld", "scienceworld",
             "textworld_express", "alfworld")


def test_importing_and_using_memory_loads_no_forbidden_module():
    code = (
        "import json, sys\n"
        "import smcplan.memory as m\n"
        "kg = m.KnowledgeGraph([('apple 1', 'on', 'table 1')])\n"
        "kg.observe('You arrive at countertop 1. On the countertop 1, you see a egg 1.', "
        "env_kind='alfworld')\n"
        "kg.retrieve('egg'); kg.to_json()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []
