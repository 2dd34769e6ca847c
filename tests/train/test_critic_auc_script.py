"""scripts/critic_auc.py's references on a hand-written TextWorldExpress state: the action
features the place map reads, the table critic's smoothed shares, and the ceiling's 1/k."""

from __future__ import annotations

import pytest

from smcplan.train.critic import critic_examples, critic_labels

from .conftest import load_script

OBS = (
    "You are in the kitchen. In one part of the room you see a stove. \n"
    "To the North you see a closed patio door. To the West you see the living room. "
    "To the East you see the corridor. "
)
TASK = "Your task is to search the environment and find the coin.  Once you find the coin, take it."
ACTIONS = [
    "open door to north", "move west", "move east", "move north", "close door to north",
    "inventory", "look around",
]  # fmt: skip


@pytest.fixture(scope="module")
def script():
    return load_script("critic_auc")


def _transition(t: int, gold: str) -> dict:
    return {
        "episode": "twx:coin/1", "t": t, "task": TASK, "observation": OBS, "action": gold,
        "next_observation": "You open the patio door, revealing the backyard. ",
        "facts": [], "admissible": ACTIONS,
    }  # fmt: skip


def test_features_read_the_door_states_and_the_first_step(script):
    from smcplan.planning.places import PlaceMap, read_step

    m = read_step(PlaceMap(), None, OBS, "twx")
    examples = critic_examples(critic_labels([_transition(1, "open door to north")]), None)
    got = {ex["action"]: script.action_feature(m, ex) for ex in examples}
    assert got == {
        "open door to north": ("open_closed", True),
        "move west": ("move_new", True),
        "move east": ("move_new", True),
        "move north": ("move_closed", True),
        "close door to north": ("close", True),
        "inventory": ("inventory", True),
        "look around": ("look", True),  # t = 1: not the first step
    }


def test_table_critic_and_ceiling_by_hand(script):
    shard = [_transition(1, "open door to north")]
    examples = critic_examples(critic_labels(shard), None)
    scores, table = script.feature_scores(shard, shard, examples)
    # one gold action of its cell: (1 + 1/2) / (1 + 1); the others: (0 + 1/2) / (n + 1)
    by_action = dict(zip([ex["action"] for ex in examples], scores, strict=True))
    assert by_action["open door to north"] == 0.75
    assert by_action["move west"] == by_action["move east"] == 0.5 / 3  # two moves, no gold
    assert by_action["inventory"] == 0.25
    assert table["open_closed closed_left=True"] == (1, 1)
    ceiling = script.ceiling_scores(shard, examples)
    assert ceiling == [float(ex["action"] == "open door to north") for ex in examples]
    # a gold move ties with the other move into an unvisited room (not the one into the
    # closed door): 1/2 each
    moves = [_transition(1, "move west")]
    ex2 = critic_examples(critic_labels(moves), None)
    tie = dict(zip([ex["action"] for ex in ex2], script.ceiling_scores(moves, ex2), strict=True))
    assert tie["move west"] == tie["move east"] == 0.5 and tie["open door to north"] == 0.0
