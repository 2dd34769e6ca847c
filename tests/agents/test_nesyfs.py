"""NeSyFS on the shared parts: episodes with the tiny model, reflection and slow thinking swapped
for test doubles (real component classes), ablations, and the KG updated every step."""

from __future__ import annotations

import pytest

from smcplan.agents import make
from smcplan.agents.slow_thinking import SlowThinker
from smcplan.llm import Verdict
from tests.agents.conftest import check_record, play


class FixedReflection:
    """A reflection role that always answers the same way (n votes per call), counting calls."""

    def __init__(self, answer: bool, n: int = 5) -> None:
        self.answer, self.n, self.calls = answer, n, 0

    def __call__(self, tasks, contexts, actions, seed=None):
        self.calls += len(tasks)
        votes = [self.answer] * self.n
        reason = "it looks useful" if self.answer else "this repeats what failed before"
        return [
            Verdict(self.answer, float(self.answer), votes, reason, [reason] * self.n)
            for _ in tasks
        ]


class CountingPlanner:
    """The real slow thinker, with a log of when it was called (how many rejections before)."""

    def __init__(self, inner: SlowThinker, reflection: FixedReflection | None = None) -> None:
        self.inner, self.reflection = inner, reflection
        self.calls: list[int] = []

    def __call__(self, *args, **kwargs):
        self.calls.append(self.reflection.calls if self.reflection else -1)
        return self.inner(*args, **kwargs)


def _nesyfs_checks(meta, n_votes=5, k=3):
    votes = meta["reflection_votes"]
    assert len(votes) == len(meta["proposals"]) and all(len(v) == n_votes for v in votes)
    fracs = meta["reflection_yes_fraction"]
    for f in fracs[:-1]:
        assert f < 0.8  # every proposal but the last was rejected
    if meta["executed"] == "proposal":
        assert fracs[-1] >= 0.8 and meta["rejections"] < k
    else:
        assert meta["executed"] == "planner" and meta["rejections"] == k
        assert meta["plan"]["calls"] == {"proposal": 2, "world_model": 2, "twist": 2}
    assert meta["kg_size"] >= 0 and meta["kg_extractor"] in ("rule", "llm")


@pytest.mark.slow
def test_nesyfs_plays_textworld_express_coin_with_admissible_actions_and_consistent_records(
    tiny_lm, coin_env
):
    agent = make("nesyfs", lm=tiny_lm, seed=0)
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=3)
    for p in played:
        meta = check_record(p, agent="nesyfs", context="kg")
        _nesyfs_checks(meta)
        assert meta["kg_extractor"] == "rule"  # TWX format detected from the first observation
    assert agent.belief.kg.location_of("agent") is not None  # the KG tracks where the agent is


def test_nesyfs_plays_toy_household_with_admissible_actions_and_consistent_records(
    tiny_lm, household_env
):
    agent = make("nesyfs", lm=tiny_lm, seed=3)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=3)
    for p in played:
        _nesyfs_checks(check_record(p, agent="nesyfs", context="kg"))


def test_reflection_always_no_makes_nesyfs_plan_after_exactly_three_rejections(
    tiny_lm, household_env
):
    no = FixedReflection(False)
    planner = CountingPlanner(SlowThinker(tiny_lm, num_particles=3, horizon=2), no)
    agent = make("nesyfs", lm=tiny_lm, seed=0, reflector=no, slow_thinker=planner)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
    assert planner.calls == [3 * (i + 1) for i in range(len(played))]  # once per step, after K=3
    for p in played:
        meta = check_record(p, agent="nesyfs", context="kg")
        assert meta["rejections"] == 3 and len(meta["proposals"]) == 3
        assert meta["slow_thinking"] and meta["executed"] == "planner"
        assert meta["plan"]["num_particles"] == 3 and meta["plan"]["horizon"] == 2
        assert p.step.action == meta["plan"]["action"]
        assert all(
            r["by"] == "reflection" and r["score"] == 0.0 for r in meta["rejected_proposals"]
        )
        assert len(meta["plan"]["imagined"]) == 2


class AdmissibleLog:
    """The real slow thinker, logging the admissible actions each call was given."""

    def __init__(self, inner: SlowThinker) -> None:
        self.inner, self.given = inner, []

    def __call__(self, ctx, kg, admissible, seed, **kwargs):
        self.given.append(list(admissible))
        return self.inner(ctx, kg, admissible, seed, **kwargs)


@pytest.mark.parametrize("skip", ["rejected", "loops", "none"])
def test_the_slow_thinker_does_not_hand_back_a_rejected_action_unless_told_to(
    tiny_lm, household_env, skip
):
    # reflection rejects K = 3 distinct proposals (exclude_rejected); with plan_skips="rejected"
    # the planner plans over the other admissible actions only, so its first actions and its
    # choice avoid them; "loops" without the loop guard and "none" leave the set whole
    planner = AdmissibleLog(SlowThinker(tiny_lm, num_particles=3, horizon=1))
    agent = make(
        "nesyfs", lm=tiny_lm, seed=0, reflector=FixedReflection(False), slow_thinker=planner,
        plan_skips=skip,
    )
    obs, info = household_env.reset(0)
    admissible = list(info["admissible_actions"])
    assert len(admissible) > 3  # something is left once three are rejected
    agent.reset(household_env.task, obs, admissible)
    step = agent.act(obs, admissible, info)
    rejected = {r["action"] for r in step.meta["rejected_proposals"]}
    assert len(rejected) == 3 and step.meta["executed"] == "planner"
    (given,) = planner.given
    if skip == "rejected":
        assert given == [a for a in admissible if a not in rejected]
        assert sorted(step.meta["plan_excluded"]) == sorted(rejected)
        assert step.action not in rejected
        assert not set(step.meta["plan"]["action_mass"]) & rejected
    else:
        assert given == admissible and "plan_excluded" not in step.meta


def test_an_unknown_plan_skips_names_the_choices(tiny_lm):
    from smcplan.agents.nesyfs import NeSyFSAgent
    from smcplan.errors import UnknownNameError

    known = "unknown plan_skips 'al'; known: loops, rejected, none"
    with pytest.raises(UnknownNameError, match=known):
        NeSyFSAgent(tiny_lm, plan_skips="al")


def test_reflection_always_yes_executes_the_first_fast_action_without_planning(
    tiny_lm, household_env
):
    yes = FixedReflection(True)
    planner = CountingPlanner(SlowThinker(tiny_lm, num_particles=2, horizon=1), yes)
    agent = make("nesyfs", lm=tiny_lm, seed=0, reflector=yes, slow_thinker=planner)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=3)
    assert planner.calls == [] and yes.calls == len(played)
    for p in played:
        meta = check_record(p, agent="nesyfs", context="kg")
        assert meta["executed"] == "proposal" and len(meta["proposals"]) == 1


def test_rejection_thought_goes_back_to_the_fast_module(tiny_lm, household_env):
    seen: list[str] = []
    from smcplan.llm import ActionProposal

    inner = ActionProposal(tiny_lm)

    def proposer(tasks, triplets, observations, admissible, seed=None):
        seen.extend(observations)
        return inner(tasks, triplets, observations, admissible, seed=seed)

    agent = make(
        "nesyfs", lm=tiny_lm, seed=0, reflector=FixedReflection(False), proposer=proposer,
        slow_thinking=False,
    )
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=1)
    first = played[0].step.meta["proposals"][0]["action"]
    assert "rejected" not in seen[0]
    assert f'"{first}" was rejected: this repeats what failed before' in seen[1]
    assert played[0].step.meta["executed"] == "fallback"  # no slow thinking: best rejected one


def test_reproposals_skip_rejected_actions_unless_told_not_to(tiny_lm, household_env):
    for exclude in (True, False):
        agent = make(
            "nesyfs", lm=tiny_lm, seed=0, reflector=FixedReflection(False), slow_thinking=False,
            exclude_rejected=exclude, temperature=0.0,  # greedy: the same action unless excluded
        )
        (p,) = play(agent, household_env, tiny_lm, seed=0, max_steps=1)
        proposed = [x["action"] for x in p.step.meta["proposals"]]
        assert len(proposed) == 3
        assert len(set(proposed)) == (3 if exclude else 1)


def test_when_every_action_was_rejected_the_full_set_is_offered_again(tiny_lm):
    from smcplan.agents.nesyfs import NeSyFSAgent

    agent = NeSyFSAgent(tiny_lm, reflector=FixedReflection(False), slow_thinking=False)
    obs = "You are in the middle of a room. Looking quickly around you, you see a drawer 1."
    agent.reset("take the key 1", obs, ["look", "go to drawer 1"])
    step = agent.act(obs, ["look", "go to drawer 1"], {})
    proposed = [x["action"] for x in step.meta["proposals"]]
    assert len(proposed) == 3 and set(proposed[:2]) == {"look", "go to drawer 1"}


@pytest.mark.parametrize(
    ("flags", "context"),
    [
        ({"reflection": False}, "kg"),
        ({"slow_thinking": False}, "kg"),
        ({"context": "history"}, "history"),
        ({"context": "belief"}, "belief"),
        ({"extractor": "llm"}, "kg"),
    ],
)
def test_nesyfs_ablations_play_and_record_what_they_switch(tiny_lm, household_env, flags, context):
    no = FixedReflection(False)
    planner = CountingPlanner(SlowThinker(tiny_lm, num_particles=2, horizon=1), no)
    config = {"reflector": no, "slow_thinker": planner} if flags.get("reflection", True) else {}
    agent = make("nesyfs", lm=tiny_lm, seed=0, **config, **flags)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
    for p in played:
        meta = check_record(p, agent="nesyfs", context=context)
        if flags.get("reflection", True) is False:
            assert meta["reflection_votes"] == [] and len(meta["proposals"]) == 1
        elif flags.get("slow_thinking", True) is False:
            assert meta["executed"] == "fallback" and not meta["slow_thinking"]
        else:
            assert meta["executed"] == "planner"
        if context == "belief":
            assert isinstance(agent.belief.summary, str) and agent.belief.summary
        if flags.get("extractor") == "llm":
            assert meta["kg_extractor"] == "llm"
    if flags.get("slow_thinking", True) is False:
        assert planner.calls == []


def test_the_same_seeds_give_the_same_episode(tiny_lm, household_env):
    runs = []
    for _ in range(2):
        agent = make("nesyfs", lm=tiny_lm, seed=7, num_particles=2, horizon=1)
        played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
        runs.append([(p.step.action, p.step.meta["proposals"], p.step.meta["reflection_votes"],
                      p.step.meta["plan"]) for p in played])
    assert runs[0] == runs[1]


def scripted_proposer(tiny_lm, next_action):
    """The real proposal role, offered one action per call: ``next_action()``."""
    from smcplan.llm import ActionProposal

    inner = ActionProposal(tiny_lm)

    def propose(tasks, triplets, observations, admissible, seed=None, verbs=None):
        return inner(tasks, triplets, observations, [[next_action()]] * len(tasks), seed=seed)

    return propose


def guarded_agent(tiny_lm, proposer):
    """NeSyFS with the loop guard, a reflection that always says yes and a counted planner."""
    yes = FixedReflection(True)
    planner = CountingPlanner(SlowThinker(tiny_lm, num_particles=2, horizon=1), yes)
    agent = make(
        "nesyfs", lm=tiny_lm, seed=0, reflector=yes, slow_thinker=planner, proposer=proposer,
        loop_guard=True,
    )
    return agent, planner, yes


def test_the_loop_guard_plans_at_once_when_the_fast_action_repeats_a_step(tiny_lm, household_env):
    # the fast module (the real proposal role, offered only "look") repeats "look"; reflection
    # says yes.  Step 1 executes it; at step 2 the agent is in the same place (the rule reader of
    # the observation gives it) and "look" was executed there: a loop, so the planner runs with
    # no reflection call, and again at step 3 unless the planner moved the agent.
    only_look = scripted_proposer(tiny_lm, lambda: "look")
    agent, planner, yes = guarded_agent(tiny_lm, only_look)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
    metas = [p.step.meta for p in played]
    assert agent._seen.place is not None  # the guard keys on the place here
    assert [m["executed"] for m in metas] == ["proposal", "planner"]
    assert planner.calls == [1] and yes.calls == 1  # no reflection at the loop step
    loop = metas[1]
    assert loop["rejected_proposals"][0]["by"] == "loop"
    assert loop["rejected_proposals"][0]["action"] == "look"
    assert loop["slow_thinking_reason"] == "loop" and "slow_thinking_reason" not in metas[0]
    assert played[1].step.thought.startswith("slow thinking after a loop")
    # plan_skips="loops": the planner may not hand the loop back
    assert loop["plan_excluded"] == ["look"] and played[1].step.action != "look"
    assert "look" not in loop["plan"]["action_mass"]
    # off by default: the same agent without the guard executes "look" three times
    plain = make("nesyfs", lm=tiny_lm, seed=0, reflector=FixedReflection(True), proposer=only_look)
    assert [p.step.action for p in play(plain, household_env, tiny_lm, seed=0, max_steps=3)] == [
        "look"
    ] * 3


@pytest.mark.slow
def test_the_loop_guard_lets_a_failed_move_be_retried_once_the_door_is_open(tiny_lm, coin_env):
    # TWX coin seed 10000 starts in the kitchen with a closed wood door to the east: "move east"
    # fails ("You can't move there, the door is closed."), "open door to east" opens it (a new
    # observation, the same place), and then "move east" is no loop (the fast module's scripted
    # action is executed); "open door to east" again would be one ("That is already open.")
    script = ["move east", "open door to east", "move east"]
    agent, planner, _ = guarded_agent(tiny_lm, scripted_proposer(tiny_lm, lambda: script.pop(0)))
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=3)
    assert [p.step.action for p in played] == ["move east", "open door to east", "move east"]
    assert [p.step.meta["executed"] for p in played] == ["proposal"] * 3 and planner.calls == []
    assert played[1].observation.startswith("You can't move there")
    assert played[2].observation.startswith("You open the wood door")
    # in the kitchen "open door to east" is now a loop, and the planner may not choose it
    assert agent._loops_here(played[2].observation, ["open door to east", "move west"]) == [
        "open door to east"
    ]


def test_follow_plan_executes_the_imagined_trajectory_while_the_world_matches_it(tiny_lm):
    # The toy household where nothing can be taken from a closed drawer (the lookahead case of
    # tests/planning/test_simulator_planning.py): with the simulator world model the planner's
    # heaviest particle starts with "open drawer 1" and wins by "take key 1 from drawer 1" within
    # H = 3 steps.  With follow_plan the agent executes the rest of that particle's actions
    # without another planner call, because every real observation is the one the particle's
    # clone produced.
    from smcplan.envs import make as make_env

    env = make_env(
        "toy:household",
        receptacles=("drawer 1", "drawer 2"),
        key_prior=(1.0, 0.0),
        start="drawer 1",
        closed_take="fails",
    )
    settings = dict(
        world_model="simulator", slow_thinking="always", progress="env", plan_proposal="uniform",
        num_particles=512, horizon=3, choice="max_weight",
    )
    try:
        runs = {}
        for follow in (True, False):
            agent = make("nesyfs", lm=tiny_lm, seed=0, follow_plan=follow, **settings)
            agent.attach_simulator(env.clone, env)
            agent.slow_thinker = planner = CountingPlanner(agent.slow_thinker)
            played = play(agent, env, tiny_lm, seed=0, max_steps=3)
            runs[follow] = (played, planner.calls)
        played, calls = runs[True]
        actions = [p.step.action for p in played]
        assert actions[0] == "open drawer 1" and actions[-1] == "take key 1 from drawer 1"
        assert played[-1].done and 2 <= len(played) <= 3
        assert len(calls) == 1  # every later step followed the plan
        for p in played[1:]:
            assert p.step.meta["executed"] == "planner"
            assert p.step.meta["slow_thinking_reason"] == "plan"
            assert p.step.thought.startswith("following the slow thinker's plan")
        # off (the default, as in the paper): the planner runs at every step
        assert len(runs[False][1]) == len(runs[False][0])
    finally:
        env.close()
