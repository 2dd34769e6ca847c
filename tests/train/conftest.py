"""Fixtures of the training tests: offline, one CPU thread, the tiny model, small shards."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TASK = "Your task is to find the coin. Once you find the coin, take it."
OBS = [
    "You are in the kitchen. You see a fridge that is closed. To the West you see the hallway.",
    "You are in the hallway. You see a coin. To the East you see the kitchen.",
    "You take the coin.",
]
ACTIONS = ["move west", "take coin"]


SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str):
    """``scripts/<name>.py`` imported as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: a counterfactual step from the first state (``write_shard(..., branches=True)``)
BRANCH = ("move east", "You can't move there, the door is closed.")


def write_shard(path, episodes=(10000,), partial=None, branches=False):
    """A valid shard with one two-step episode per seed (and a torn episode ``partial``);
    ``branches``: each episode also records :data:`BRANCH` at its first state."""
    from smcplan.train.data import SHARD_SCHEMA

    lines = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "twx:coin", "seeds": list(episodes)}]
    for seed in [*episodes, *([partial] if partial is not None else [])]:
        for t, action in enumerate(ACTIONS):
            lines.append(
                {
                    "kind": "transition",
                    "episode": f"twx:coin/{seed}",
                    "seed": seed,
                    "t": t,
                    "task": TASK,
                    "observation": OBS[t],
                    "action": action,
                    "next_observation": OBS[t + 1],
                    "reward": float(t == 1),
                    "done": t == 1,
                    "won": t == 1,
                    "score": float(t == 1),
                    "facts": [["agent", "in", "kitchen" if t == 0 else "hallway"]],
                }
            )
            if branches and t == 0:
                lines.append(
                    {
                        **lines[-1],
                        "kind": "branch",
                        "action": BRANCH[0],
                        "next_observation": BRANCH[1],
                        "reward": 0.0,
                        "done": False,
                        "won": False,
                        "score": 0.0,
                    }
                )
        if seed != partial:
            lines.append(
                {
                    "kind": "episode",
                    "episode": f"twx:coin/{seed}",
                    "seed": seed,
                    "won": True,
                    "steps": 2,
                    "score": 1.0,
                }
            )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def shard(tmp_path):
    return write_shard(tmp_path / "shard.jsonl", episodes=(10000, 10001))


@pytest.fixture(scope="session", autouse=True)
def no_java_process_left_behind():
    yield
    try:
        from smcplan.envs._jvm import live_pids
    except ImportError:
        return
    gc.collect()
    assert not live_pids(), f"JVMs still running after the train tests: {sorted(live_pids())}"


@pytest.fixture
def seen(monkeypatch):
    """Every (state, candidate texts) the policy head's features are asked for, in order
    (a spy on :meth:`smcplan.llm.roles.policy_head.FeatureCache.lookup`)."""
    from smcplan.llm.roles.policy_head import FeatureCache

    calls: list[tuple[str, list[str]]] = []
    lookup = FeatureCache.lookup

    def spy(self, name, state, candidates, compute):
        calls.append((state, list(candidates)))
        return lookup(self, name, state, candidates, compute)

    monkeypatch.setattr(FeatureCache, "lookup", spy)
    return calls


@pytest.fixture(scope="session")
def webshop_labelled(tmp_path_factory):
    """A real WebShop shard (gold paths of train goals 75 and 76, 3 branches a step) and its
    rollout labels (4 rollouts of at most 6 steps a step): ``(shard, labels)``."""
    from smcplan.train.collect import collect
    from smcplan.train.rollout_labels import label_shard

    root = tmp_path_factory.mktemp("webshop-labelled")
    shard, labels = root / "gold.jsonl", root / "gold.labels.jsonl"
    collect("webshop", [75, 76], shard, source="gold", split="train", max_steps=15, branches=3,
            progress=False)  # fmt: skip
    label_shard(shard, "webshop", labels, rollouts=4, rollout_steps=6)
    return shard, labels
