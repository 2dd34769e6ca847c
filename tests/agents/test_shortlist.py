"""The action shortlist: exact ranking on hand-made lists, the real ScienceWorld action set cut to
``max_actions`` admissible actions, and an agent that sees only the shortlist."""

from __future__ import annotations

import pytest

from smcplan.agents import make
from smcplan.agents.shortlist import relevance, shortlist_actions

TASK = "Your task is to find a living thing. Then, move it to the red box in the kitchen."


def test_relevance_is_twice_the_task_words_minus_the_other_words():
    # W("move red box to hallway") = {move, red, box, hallway}; T has move, red, box
    assert relevance("move red box to hallway", TASK) == 2 * 3 - 1
    assert relevance("look around", TASK) == -2
    assert relevance("inventory", TASK) == -1


def test_a_short_list_is_returned_whole_in_its_order():
    acts = ["look around", "inventory", "go to hallway"]
    assert shortlist_actions(acts, TASK, k=3) == acts
    assert shortlist_actions(acts, TASK, k=64) == acts


def test_the_best_action_of_every_verb_comes_first_then_relevance_in_the_env_order():
    acts = [
        "pour cup containing paint in cupboard into jug",  # pour: 2*0 - 5 = -5 (only pour)
        "move chair to hallway",  # move: 2*1 - 2 = 0
        "move red box to kitchen",  # move: 2*4 - 0 = 8 (best move)
        "look around",  # look: -2
        "look at red box",  # look: 2*2 - 1 = 3 (best look)
        "move sofa to chair",  # move: 2 - 2 = 0
        "open cupboard",  # open: -2
    ]
    # verbs' best: pour(-5), move red box(8), look at red box(3), open(-2): 4 places of 5,
    # the fifth goes to the next most relevant: "move chair to hallway" (0, earlier than sofa)
    got = shortlist_actions(acts, TASK, k=5)
    assert got == [acts[0], acts[1], acts[2], acts[4], acts[6]]
    # with fewer places than verbs, the most relevant verbs win
    assert shortlist_actions(acts, TASK, k=2) == ["move red box to kitchen", "look at red box"]


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "8"])
def test_k_must_be_a_positive_integer(k):
    with pytest.raises(ValueError, match="positive integer"):
        shortlist_actions(["a", "b"], TASK, k=k)


def test_an_agent_refuses_a_bad_max_actions(tiny_lm):
    with pytest.raises(ValueError, match="max_actions"):
        make("react", lm=tiny_lm, max_actions=0)


@pytest.fixture(scope="module")
def scienceworld_env():
    from smcplan.envs import make as make_env

    env = make_env("scienceworld:find-living-thing", split="dev", max_steps=20)
    yield env
    env.close()


@pytest.mark.slow
def test_real_scienceworld_actions_are_cut_to_admissible_task_relevant_ones(scienceworld_env):
    obs, info = scienceworld_env.reset(150)
    acts = list(info["admissible_actions"])
    assert len(acts) > 500  # why the shortlist exists
    short = shortlist_actions(acts, scienceworld_env.task, k=64)
    assert len(short) == 64 and set(short) <= set(acts)
    assert short == [a for a in acts if a in set(short)]  # the environment's order
    assert "focus on red box" in short and "move red box to kitchen" in short
    verbs = {a.split(" ", 1)[0] for a in acts}
    assert verbs <= {a.split(" ", 1)[0] for a in short}  # no kind of action disappears


@pytest.mark.slow
def test_an_agent_on_scienceworld_sees_and_records_the_shortlist(tiny_lm, scienceworld_env):
    from smcplan.llm import ActionProposal

    seen: list[list[str]] = []

    class Spy(ActionProposal):
        def __call__(self, tasks, triplets, observations, admissible, seed=None):
            seen.extend(list(a) for a in admissible)
            return super().__call__(tasks, triplets, observations, admissible, seed=seed)

    agent = make("react", lm=tiny_lm, seed=0, proposer=Spy(tiny_lm, think=False), max_actions=16)
    obs, info = scienceworld_env.reset(150)
    acts = list(info["admissible_actions"])
    agent.reset(scienceworld_env.task, obs, acts)
    step = agent.act(obs, acts, info)
    assert step.action in acts
    assert seen == [shortlist_actions(acts, scienceworld_env.task, k=16)]
    assert step.meta["shortlist"] == [16, len(acts)]
