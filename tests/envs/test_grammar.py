"""The action grammars: every admissible action of sampled episodes starts with a declared verb,
and the adapters hand the verbs to the agents in ``info["action_verbs"]``."""

from __future__ import annotations

import random

import pytest

from smcplan.envs.grammar import (
    ALFWORLD_VERBS,
    SCIENCEWORLD_VERBS,
    TWX_VERBS,
    action_verbs,
)
from smcplan.envs.textworld_express import GAMES


def starts_with_a_verb(action: str, verbs) -> bool:
    return any(action == v or action.startswith(v + " ") for v in verbs)


def walk(env, seed: int, steps: int, rng: random.Random) -> set[str]:
    """Every admissible action seen on a random walk of ``steps`` steps from ``reset(seed)``."""
    _obs, info = env.reset(seed)
    seen = set(info["admissible_actions"])
    for _ in range(steps):
        if not info["admissible_actions"]:
            break
        r = env.step(rng.choice(info["admissible_actions"]))
        info = r.info
        seen |= set(info["admissible_actions"])
        if r.done:
            break
    return seen


def test_action_verbs_by_env_name():
    assert action_verbs("twx:coin") == TWX_VERBS["coin"]
    assert action_verbs("alfworld:pick_two_obj_and_place") == ALFWORLD_VERBS
    assert action_verbs("scienceworld:boil") == SCIENCEWORLD_VERBS
    assert action_verbs("webshop") is None and action_verbs("toy:household") is None
    assert set(TWX_VERBS) == set(GAMES)


@pytest.mark.slow  # one TWX JVM, 8 games x 4 seeds x 20 random steps (~20 s)
def test_every_twx_admissible_action_starts_with_a_verb_of_its_game():
    from smcplan.envs import make

    rng = random.Random(0)
    first = None
    try:
        for game in GAMES:
            env = make(f"twx:{game}", _share=first._jvm if first else None)
            first = first or env
            for seed in (0, 1, 10000, 20000):
                for action in walk(env, seed, 20, rng):
                    assert starts_with_a_verb(action, TWX_VERBS[game]), (game, action)
            _obs, info = env.reset(0)
            assert info["action_verbs"] == list(TWX_VERBS[game])
            if env is not first:
                env.close()
    finally:
        if first is not None:
            first.close()


@pytest.mark.slow  # generates (or reads cached) games of two task types and walks them
def test_every_alfworld_admissible_action_starts_with_an_alfworld_verb():
    from smcplan.envs import make

    rng = random.Random(0)
    for task_type in ("pick_and_place", "pick_heat_then_place"):
        env = make(f"alfworld:{task_type}", seed=0)
        try:
            seen = walk(env, 0, 15, rng) | set(env.gold_actions())
            assert all(starts_with_a_verb(a, ALFWORLD_VERBS) for a in seen), sorted(seen)
        finally:
            env.close()


@pytest.mark.slow  # one ScienceWorld JVM, a few random steps
def test_every_scienceworld_admissible_action_starts_with_a_template_verb():
    from smcplan.envs import make

    env = make("scienceworld:boil")
    try:
        seen = walk(env, 0, 3, random.Random(0))
        bad = sorted(a for a in seen if not starts_with_a_verb(a, SCIENCEWORLD_VERBS))
        assert not bad, bad[:10]
    finally:
        env.close()
