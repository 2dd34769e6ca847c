"""RLAW on the shared parts: the critic loop (threshold, feedback, at most 3 regenerations, best
of the rejected), the recorded return, the actor's action mapping, and whole episodes."""

from __future__ import annotations

import functools

import pytest

from smcplan.agents import make
from smcplan.agents.llm_agent import Candidate
from smcplan.agents.matching import match_admissible
from smcplan.agents.rlaw import JSONActor, RLAWAgent, discounted_return
from smcplan.llm import Critic, Critique
from tests.agents.conftest import check_record, play


@functools.cache
def smollm2():
    """SmolLM2-135M (the packaged real model), loaded once for this share's slow tests, on one
    CPU thread: on the shared 2-core machine torch's default threads ran 4-14x slower
    (measured: docs/agents_rlaw_rlvmr.md)."""
    from smcplan.llm import load_model

    return load_model(threads=1)


class ScriptedCritic(Critic):
    """A real Critic (same role, same call) whose scores come from a script, for the critic
    role only: the actor and everything else stay real. Records what it was asked."""

    def __init__(self, lm, scores):
        super().__init__(lm)
        self.scores = list(scores)
        self.calls: list[tuple[str, str]] = []

    def __call__(self, tasks, contexts, thoughts, actions, seed=None, notes=None):
        self.notes = notes
        out = []
        for z, a in zip(thoughts, actions, strict=True):
            score = self.scores[min(len(self.calls), len(self.scores) - 1)]
            self.calls.append((z, a))
            out.append(Critique(True, True, score, f"score {score} for {a}"))
        return out


class SpyActor:
    """Delegates to the real JSON actor and records the critique it was given each call."""

    def __init__(self, inner):
        self.inner = inner
        self.critiques: list[str | None] = []

    def __call__(self, task, context, admissible, critique=None, seed=None) -> Candidate:
        self.critiques.append(critique)
        return self.inner(task, context, admissible, critique, seed)


def _one_step(agent, env, seed=0):
    obs, info = env.reset(seed)
    agent.reset(env.task, obs, info["admissible_actions"])
    return agent.act(obs, info["admissible_actions"], info), info["admissible_actions"]


# ------------------------------------------------------------------ the critic loop
def test_a_critic_scoring_0_5_then_0_9_makes_rlaw_execute_the_second_proposal(
    tiny_lm, household_env
):
    critic = ScriptedCritic(tiny_lm, [0.5, 0.9])
    actor = SpyActor(JSONActor(tiny_lm))
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, actor=actor)
    step, admissible = _one_step(agent, household_env)
    meta = step.meta
    assert meta["critic_scores"] == [0.5, 0.9]
    assert len(meta["proposals"]) == 2 and meta["rejections"] == 1
    assert step.action == meta["proposals"][1]["action"] == critic.calls[1][1]
    assert step.thought == meta["proposals"][1]["thought"]
    assert meta["executed"] == "proposal" and meta["r_critique"] == 0.9
    # the rejection's reason went back to the actor for its second proposal
    first = meta["proposals"][0]["action"]
    assert actor.critiques == [None, f'"{first}" was rejected: score 0.5 for {first}']
    assert meta["rejected_proposals"][0]["by"] == "critic"
    assert meta["rejected_proposals"][0]["score"] == 0.5


def test_rlaw_never_regenerates_more_than_3_times_and_then_executes_the_best_proposal(
    tiny_lm, household_env
):
    scores = [0.1, 0.6, 0.3, 0.6, 0.9]  # the fifth would be accepted, but is never asked for
    critic = ScriptedCritic(tiny_lm, scores)
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic)
    step, _ = _one_step(agent, household_env)
    meta = step.meta
    assert len(critic.calls) == 4 and meta["critic_scores"] == scores[:4]
    assert meta["regenerations"] == 3 and meta["rejections"] == 4
    assert meta["executed"] == "fallback"
    # best-scored proposal, the first among equals (0.6 at index 1 and 3)
    assert step.action == meta["proposals"][1]["action"]
    assert meta["r_critique"] == 0.6


def test_max_regenerations_and_tau_are_configurable(tiny_lm, household_env):
    critic = ScriptedCritic(tiny_lm, [0.1, 0.2, 0.3])
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, max_regenerations=1)
    step, _ = _one_step(agent, household_env)
    assert len(critic.calls) == 2 and step.meta["executed"] == "fallback"
    critic = ScriptedCritic(tiny_lm, [0.5])
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, tau=0.5)
    step, _ = _one_step(agent, household_env)
    assert len(critic.calls) == 1 and step.meta["executed"] == "proposal"


class PoolSpy:
    """Delegates to the real JSON actor and records the admissible set it was given."""

    def __init__(self, inner):
        self.inner, self.pools = inner, []

    def __call__(self, task, context, admissible, critique=None, seed=None) -> Candidate:
        self.pools.append(list(admissible))
        return self.inner(task, context, admissible, critique, seed)


def test_distinct_regenerations_never_propose_a_rejected_action_again(tiny_lm, household_env):
    critic = ScriptedCritic(tiny_lm, [0.1, 0.2, 0.3, 0.6])
    actor = PoolSpy(JSONActor(tiny_lm))
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, actor=actor, distinct_regenerations=True)
    step, admissible = _one_step(agent, household_env)
    proposed = [p["action"] for p in step.meta["proposals"]]
    assert len(proposed) == 4 and len(set(proposed)) == 4  # 4 distinct actions
    assert set(proposed) <= set(admissible)
    for k, pool in enumerate(actor.pools):  # each pool is the admissible set less the rejected
        assert pool == [a for a in admissible if a not in proposed[:k]]
    assert step.action == proposed[3] and step.meta["executed"] == "fallback"


def test_distinct_regenerations_fall_back_to_the_whole_set_once_all_are_rejected(tiny_lm):
    critic = ScriptedCritic(tiny_lm, [0.0])
    actor = PoolSpy(JSONActor(tiny_lm))
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, actor=actor, distinct_regenerations=True,
                      max_regenerations=3)
    agent.reset("find the key", "You are in a room.", ["look", "wait"])
    step = agent.act("You are in a room.", ["look", "wait"], {})
    proposed = [p["action"] for p in step.meta["proposals"]]
    assert sorted(proposed[:2]) == ["look", "wait"]
    assert actor.pools[2] == actor.pools[3] == ["look", "wait"]  # nothing left: the whole set
    assert step.action == proposed[0]  # all score 0: the first among equals


def test_distinct_regenerations_is_a_boolean_and_needs_mapped_actions(tiny_lm):
    with pytest.raises(ValueError, match="distinct_regenerations must be true or false"):
        RLAWAgent(tiny_lm, distinct_regenerations="yes")
    with pytest.raises(ValueError, match="use action_mode='admissible'"):
        RLAWAgent(tiny_lm, distinct_regenerations=True, action_mode="free")


class ActionCritic(Critic):
    """A real Critic whose score is a fixed table of actions (others 0), for the critic role
    only; records every (thought, action) it was asked about, in order."""

    def __init__(self, lm, table):
        super().__init__(lm)
        self.table, self.calls = dict(table), []

    def __call__(self, tasks, contexts, thoughts, actions, seed=None, notes=None):
        self.calls.append(list(zip(thoughts, actions, strict=True)))
        return [Critique(True, True, self.table.get(a, 0.0), "table") for a in actions]


def test_critic_fallback_ranks_the_unproposed_actions_and_executes_the_best(
    tiny_lm, household_env
):
    obs, info = household_env.reset(0)
    admissible = info["admissible_actions"]
    agent = RLAWAgent(tiny_lm, seed=0, critic=ActionCritic(tiny_lm, {}), fallback="critic",
                      distinct_regenerations=True)
    agent.reset(household_env.task, obs, admissible)
    probe = agent.act(obs, admissible, info)  # every score 0: which actions does the actor try?
    proposed = [p["action"] for p in probe.meta["proposals"]]
    rest = [a for a in admissible if a not in proposed]
    assert rest and probe.meta["executed"] == "fallback"  # ties: the first proposal stays
    assert probe.action == proposed[0] and probe.meta["critic_ranked"] == dict.fromkeys(rest, 0.0)

    target = rest[-1]
    critic = ActionCritic(tiny_lm, {target: 0.5, proposed[1]: 0.4})
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, fallback="critic",
                      distinct_regenerations=True)
    agent.reset(household_env.task, obs, admissible)
    step = agent.act(obs, admissible, info)
    assert [p["action"] for p in step.meta["proposals"]] == proposed  # same seed, same actor
    assert step.action == target and step.meta["executed"] == "critic"
    assert step.thought == f"I will {target}." and step.meta["r_critique"] == 0.5
    # one batched call over the unproposed actions, thought slot "I will <action>."
    assert critic.calls[-1] == [(f"I will {a}.", a) for a in rest]

    critic = ActionCritic(tiny_lm, {target: 0.4, proposed[1]: 0.5})  # a proposal is better
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, fallback="critic",
                      distinct_regenerations=True)
    agent.reset(household_env.task, obs, admissible)
    step = agent.act(obs, admissible, info)
    assert step.action == proposed[1] and step.meta["executed"] == "fallback"


def test_fallback_is_checked(tiny_lm):
    with pytest.raises(ValueError, match="unknown fallback 'random'; known: best, critic"):
        RLAWAgent(tiny_lm, fallback="random")
    with pytest.raises(ValueError, match="fallback='critic' ranks the admissible set"):
        RLAWAgent(tiny_lm, fallback="critic", action_mode="free")


# ------------------------------------------------------------------ return, mapping, ablations
def test_the_recorded_return_is_the_discounted_sum_of_env_and_critique_rewards(
    tiny_lm, household_env
):
    critic = ScriptedCritic(tiny_lm, [0.8, 0.2, 0.9, 0.75])
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, max_regenerations=0)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    r_crit = [p.step.meta["r_critique"] for p in played]
    assert r_crit == [0.8, 0.2, 0.9, 0.75][: len(played)]
    # R_env from the env's score changes: reset score 0, then the score after each step
    r_env = [e["r_env"] for e in agent.episode_rewards]
    assert len(r_env) == len(played)
    expected = sum(0.95**t * (r_env[t] + 0.5 * r_crit[t]) for t in range(len(played)))
    assert agent.episode_return == pytest.approx(expected)
    assert agent.episode_return == pytest.approx(discounted_return(r_env, r_crit))
    assert agent.episode_info() == {"rlaw_return": agent.episode_return}
    # each step records G over the steps whose R_env was known when it acted
    for t, p in enumerate(played):
        assert p.step.meta["rlaw_return"] == pytest.approx(discounted_return(r_env[:t], r_crit[:t]))
        assert p.step.meta["rlaw_r_env_previous"] == (None if t == 0 else r_env[t - 1])


def test_discounted_return_by_hand():
    # 0.95^0 (0 + 0.5*0.8) + 0.95^1 (1 + 0.5*0.2) = 0.4 + 1.045
    assert discounted_return([0.0, 1.0], [0.8, 0.2]) == pytest.approx(1.445)
    with pytest.raises(ValueError, match="got 1 env rewards but 2 critique rewards"):
        discounted_return([0.0], [0.1, 0.2])


def test_match_admissible_exact_then_normalised_else_mismatch():
    acts = ["open door", "take coin"]
    assert match_admissible("open door", acts) == ("open door", "exact")
    assert match_admissible("  Take   Coin. ", acts) == ("take coin", "normalized")
    assert match_admissible("take the coin", acts) == (None, "mismatch")


def test_the_actor_maps_a_free_json_action_onto_the_admissible_set_and_records_it(
    tiny_lm, household_env
):
    agent = RLAWAgent(tiny_lm, seed=3, use_critic=False)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=3)
    for p in played:
        (prop,) = p.step.meta["proposals"]
        assert prop["action"] == p.step.action in p.admissible
        assert prop["mapping"] in ("exact", "normalized", "logprob")
        assert prop["mapped"] == (prop["mapping"] == "logprob")
        if prop["mapping"] == "exact":
            assert prop["raw_action"] == prop["action"]
        if prop["mapped"]:  # the random model's free text names no admissible action
            assert match_admissible(prop["raw_action"], p.admissible)[0] is None


def test_no_critic_ablation_makes_no_critic_call(tiny_lm, household_env):
    agent = RLAWAgent(tiny_lm, seed=0, use_critic=False)
    assert agent.critic is None
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
    for p in played:
        meta = check_record(p, agent="rlaw", context="kg")
        assert meta["critic_scores"] == [] and meta["r_critique"] == 0.0
        assert len(meta["proposals"]) == 1


def test_graph_memory_ablation_uses_the_history_and_contradictions_are_errors(tiny_lm):
    assert RLAWAgent(tiny_lm, graph_memory=False).belief.mode == "history"
    assert RLAWAgent(tiny_lm).belief.mode == "kg"
    with pytest.raises(ValueError, match="contradicts graph_memory=True"):
        RLAWAgent(tiny_lm, context="history")
    with pytest.raises(ValueError, match="unknown decoding 'free'; known: json, scored"):
        RLAWAgent(tiny_lm, decoding="free")


def test_scored_decoding_uses_the_rlaw_actor_role(tiny_lm, household_env):
    agent = RLAWAgent(tiny_lm, seed=0, decoding="scored", critic=ScriptedCritic(tiny_lm, [0.9]))
    step, admissible = _one_step(agent, household_env)
    assert step.action in admissible and step.meta["proposals"][0]["mapping"] == "exact"


# ------------------------------------------------------------------ whole episodes
def test_rlaw_plays_toy_household_with_admissible_actions_and_consistent_records(
    tiny_lm, household_env
):
    agent = make("rlaw", lm=tiny_lm, seed=1)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    for p in played:
        meta = check_record(p, agent="rlaw", context="kg")
        assert 1 <= len(meta["proposals"]) <= 4
        assert len(meta["critic_scores"]) == len(meta["proposals"])
        assert "kg_retrieved" in meta
        if p is not played[0]:  # the graph is updated from the second observation on
            assert "kg_size" in meta


@pytest.mark.slow
@pytest.mark.parametrize(
    "extension", [{}, {"distinct_regenerations": True, "fallback": "critic"}], ids=["paper", "ext"]
)
def test_rlaw_plays_textworld_express_coin_with_admissible_actions_and_consistent_records(
    tiny_lm, coin_env, extension
):
    agent = make("rlaw", lm=tiny_lm, seed=0, **extension)
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=3)
    assert len(played) == 3 or played[-1].done
    for p in played:
        meta = check_record(p, agent="rlaw", context="kg")
        ranked = list(meta.get("critic_ranked", {}).values())
        assert meta["r_critique"] in meta["critic_scores"] + ranked
        if extension:
            actions = [x["action"] for x in meta["proposals"]]
            assert len(set(actions)) == len(actions)
    assert len(agent.episode_rewards) == len(played)


@pytest.mark.slow
def test_rlaw_with_smollm2_plays_a_short_coin_episode(coin_env):
    lm = smollm2()
    agent = make("rlaw", lm=lm, seed=0, thought_tokens=24, action_tokens=12, max_regenerations=1)
    played = play(agent, coin_env, lm, seed=10000, max_steps=2)
    for p in played:
        meta = check_record(p, agent="rlaw", context="kg")
        assert 1 <= len(meta["proposals"]) <= 2
        assert all(0.0 <= c <= 1.0 for c in meta["critic_scores"])
        assert meta["r_critique"] in meta["critic_scores"]
    assert len(agent.episode_rewards) == len(played)


def test_critic_notes_give_the_critic_what_the_map_says_about_the_proposal(tiny_lm, coin_env):
    """``critic_notes=True``: the critic is asked with the proposal's map note, read from the
    episode's real observations (the first step: "No step has been taken yet; ...")."""
    from smcplan.agents.map_notes import MapNotes

    critic = ScriptedCritic(tiny_lm, [0.9])
    agent = RLAWAgent(tiny_lm, seed=0, critic=critic, critic_notes=True)
    step, _ = _one_step(agent, coin_env, seed=10000)
    obs, _ = coin_env.reset(10000)
    expected = MapNotes("twx:coin")
    expected.reset(obs)
    assert critic.notes == expected.notes([step.action])
    assert critic.notes[0].startswith("No step has been taken yet;")
    assert step.meta["critic_notes"] == critic.notes
    plain = ScriptedCritic(tiny_lm, [0.9])
    _one_step(RLAWAgent(tiny_lm, seed=0, critic=plain), coin_env, seed=10000)
    assert plain.notes is None  # off by default: the prompt stays the plain one
    with pytest.raises(ValueError, match="critic_notes"):
        RLAWAgent(tiny_lm, critic=plain, critic_notes="yes")


def test_a_trained_critics_manifest_turns_its_notes_on(tmp_path):
    from smcplan.agents.rlaw import trained_with_notes

    adapter = tmp_path / "critic" / "adapter"
    adapter.mkdir(parents=True)
    assert trained_with_notes(None) is False and trained_with_notes(str(adapter)) is False
    (tmp_path / "critic" / "train.json").write_text('{"map_notes": true}', encoding="utf-8")
    assert trained_with_notes(str(adapter)) is True
