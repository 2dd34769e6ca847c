"""Every role returns schema-valid, correctly shaped output for mixed batches (tiny model)."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from smcplan.llm.roles import (
    ActionProposal,
    Critic,
    ObservationModel,
    ProgressModel,
    Reflection,
    RLAWActor,
    TripletExtractor,
)
from smcplan.llm.templates import load_role
from tests.tolerance import (
    EPS32,
    EPS64,
    chain_tol,
    llama_logprob_tol,
    log_softmax_tol,
    logsumexp_tol,
)

OBS = [
    "You are in the kitchen. A coin is on the table.",
    "Nothing happens.",
    "The fridge is open; inside is an apple ✓.",
]
ACTIONS = [
    ["take coin", "take coin from table", "go north"],
    ["look"],
    ["open fridge", "close fridge", 'say "hi"'],
]


def test_triplets_are_bounded_string_triples_for_mixed_batches(tiny):
    # random weights rarely close a string within the budget, so the lists are often empty here;
    # the SmolLM2 test checks that real triplets come out
    extractor = TripletExtractor(tiny, temperature=1.0)
    for seed in range(2):
        out = extractor(OBS, ["look", None, "open fridge"], seed=seed)
        assert len(out) == 3
        for triplets in out:
            assert len(triplets) <= extractor.assets.settings["max_triplets"]
            for t in triplets:
                assert isinstance(t, tuple) and len(t) == 3
                assert all(
                    isinstance(x, str) and 0 < len(x) <= extractor.assets.settings["max_chars"]
                    for x in t
                )


def test_action_proposal_returns_admissible_actions_and_exact_log_q(tiny):
    props = ActionProposal(tiny, temperature=1.0)(
        ["find the coin"] * 3, [[("coin", "on", "table")], [], []], OBS, ACTIONS, seed=0
    )
    for p, acts in zip(props, ACTIONS, strict=True):
        assert p.action in acts
        k = acts.index(p.action)
        assert p.logq == pytest.approx(p.log_probs[k]) and p.logp == pytest.approx(p.log_probs[k])
    # the single admissible action has q = 1
    assert props[1].logq == pytest.approx(0.0)


def test_action_proposal_scores_are_the_lm_scores_of_action_plus_eos(tiny):
    role = ActionProposal(tiny)
    (p,) = role(["t"], [[]], ["o"], [ACTIONS[0]], seed=0)
    prompt = role.assets.messages(
        task="t", triplets=[], observation="o", admissible=ACTIONS[0], think=False
    )
    s = tiny.logprob([prompt] * 3, ACTIONS[0], add_eos=True)
    # the same call in float32; its log-softmax is float32 arithmetic on both sides, and a
    # second forward pass may round the scores differently (seen: 1.1e-9 after other tests ran)
    tol = log_softmax_tol(3, float(np.abs(s).max()), EPS32)
    np.testing.assert_allclose(p.log_probs, s - np.logaddexp.reduce(s), atol=tol)


def test_action_proposal_greedy_picks_the_argmax(tiny):
    props = ActionProposal(tiny, temperature=0.0)(["t"] * 3, [[]] * 3, OBS, ACTIONS, seed=0)
    for p, acts in zip(props, ACTIONS, strict=True):
        assert p.action == acts[int(np.argmax(p.log_probs))] and p.logq == 0.0


def test_action_proposal_frequencies_match_q(tiny):
    # N iid draws from q (all particles share one prompt: one prompt pass). With T = 50 q is spread
    # out; each count is Binomial(N, q_k), so |freq_k - q_k| <= 5 sd holds except w.p. < 1e-6.
    N, T = 400, 50.0
    role = ActionProposal(tiny, temperature=T)
    props = role(["t"] * N, [[]] * N, ["o"] * N, [ACTIONS[0]] * N, seed=123)
    q = np.exp(np.array(props[0].log_probs) / T)
    q /= q.sum()
    freq = np.array([sum(p.action == a for p in props) for a in ACTIONS[0]]) / N
    assert np.all(np.abs(freq - q) <= 5 * np.sqrt(q * (1 - q) / N) + 1e-12)


def test_action_proposal_with_thought(tiny):
    props = ActionProposal(tiny, think=True)(["t"] * 3, [[]] * 3, OBS, ACTIONS, seed=1)
    for p, acts in zip(props, ACTIONS, strict=True):
        assert p.action in acts and len(p.thought) >= 1 and "\n" not in p.thought
        assert p.thought_logq < 0


def test_a_thought_is_one_line_ended_by_the_first_line_break(tiny):
    """The proposal's thought grammar: text, then at most one line break, after which only
    end-of-sequence is allowed (ReAct's one-line thought stops there, not at the token cap)."""
    from outlines.types import Regex

    assets = load_role("proposal")
    regex = Regex(assets.settings["thought_regex"])
    samples = tiny.sample(["t"], regex, n=64, temperature=2.0, max_new_tokens=48, seed=3)[0]
    ended = [s for s in samples if s.text.endswith("\n")]
    assert ended  # the seeded draws include line breaks (random weights: ~1/512 per token)
    for s in samples:
        assert "\n" not in s.text.rstrip("\n") and s.text.count("\n") <= 1
    for s in ended:  # the line break closed the answer: the next draw was end-of-sequence
        assert s.finished and s.token_ids[-1] == tiny.eos_token_id
        assert tiny.tokenizer.decode(s.token_ids[-2:-1]).endswith("\n")
    # the role strips the line break (its prefix template writes "\nAction: " itself)
    props = ActionProposal(tiny, think=True, thought_temperature=2.0)(
        ["t"] * 3, [[]] * 3, OBS, ACTIONS, seed=5
    )
    assert all(p.thought and not p.thought.endswith("\n") for p in props)


def test_action_proposal_rejects_empty_admissible_set(tiny):
    with pytest.raises(ValueError, match="particle 1: admissible actions must be a non-empty list"):
        ActionProposal(tiny)(["t", "t"], [[], []], ["o", "o"], [["a"], []])


def test_roles_reject_ragged_batches(tiny):
    with pytest.raises(ValueError, match="batch columns differ"):
        ProgressModel(tiny)(["t", "t"], ["a"], ["x", "y"], ["o", "p"])


def test_observation_model_samples_text_and_scores_it(tiny):
    model = ObservationModel(tiny, max_new_tokens=6)
    out = model(["ctx one", "ctx two", "ctx three"], ["open fridge", "look", "go"], seed=0)
    assert len(out) == 3 and all(isinstance(s.value, str) and s.num_tokens <= 6 for s in out)
    scores = model.logprob(["ctx one"], ["open fridge"], ["The fridge is open."])
    assert scores.shape == (1,) and scores[0] < 0


def test_progress_probability_is_the_yes_no_softmax(tiny):
    role = ProgressModel(tiny)
    out = role(["find coin"] * 3, ["before"] * 3, ["take coin", "look", "go"], OBS)
    prompt = role.assets.messages(
        task="find coin", previous="before", action="take coin", observation=OBS[0]
    )
    ly, ln = tiny.logprob([prompt, prompt], ["Yes", "No"])
    # ly, ln from a batch of 2 vs the role's 6: float32 rounding model over the longer answer;
    # the sigmoid's slope is <= 1/4, so p_yes moves by <= (2 * tol) / 4; + float64 roundings
    n = max(len(tiny.encode_continuation(w)) for w in ("Yes", "No"))
    t = llama_logprob_tol(tiny.model, n, len(tiny.encode_prompt(prompt)) + n + 1)
    assert out[0].p_yes == pytest.approx(1 / (1 + np.exp(ln - ly)), abs=t / 2 + chain_tol(3, EPS64))
    for p in out:
        assert 0 < p.p_yes < 1 and p.delta == int(p.p_yes >= 0.5)
        # both float64 from the same (ly, ln): a 2-term log-sum-exp vs log of a 3-rounding
        # chain whose exp amplifies the argument's rounding u * |ln - ly|
        d = abs(p.logp_no - p.logp_yes)
        m = max(abs(p.logp_yes), abs(p.logp_no))
        tol = logsumexp_tol(2, m, EPS64) + chain_tol(3, EPS64) * (1 + d)
        assert p.log_twist == pytest.approx(np.log(p.p_yes), abs=tol)


def test_reflection_votes_and_acceptance_rule(tiny):
    schema = load_role("reflection").schema
    verdicts = Reflection(tiny, n=5)(["t"] * 3, OBS, ["take coin", "look", "open fridge"], seed=4)
    for v in verdicts:
        assert len(v.votes) == 5 and len(v.thoughts) == 5
        for z, vote in zip(v.thoughts, v.votes, strict=True):
            jsonschema.validate({"thought": z, "answer": "Yes" if vote else "No"}, schema)
        assert v.yes_fraction == sum(v.votes) / 5
        assert v.accept == (sum(v.votes) >= 4)
        if not v.accept:
            assert v.thought == v.thoughts[v.votes.index(False)]


def test_reflection_threshold_zero_accepts_everything(tiny):
    assert all(v.accept for v in Reflection(tiny, n=2, threshold=0.0)(["t"], ["c"], ["a"], seed=0))


def test_critic_output_is_schema_valid(tiny):
    schema = load_role("critic").schema
    out = Critic(tiny, temperature=1.0)(
        ["t"] * 3, OBS, ["think", "", "ü"], ["take coin", "look", "go"], seed=2
    )
    for c in out:
        jsonschema.validate(c.to_dict(), schema)


def test_critic_notes_are_one_line_more_of_the_prompt(tiny):
    """A note per action adds its line to that action's prompt (the same sample as without
    notes when every note is empty); a column of the wrong length is an error."""
    critic = Critic(tiny, temperature=0.0, settings={"max_new_tokens": 8})
    args = (["t"] * 2, OBS[:2], ["z"] * 2, ["take coin", "look"])
    assert critic(*args, seed=1) == critic(*args, seed=1, notes=["", ""])
    seen: list = []
    sample = tiny.sample

    def spy(prompts, *a, **k):
        seen.extend(p[-1]["content"] for p in prompts)
        return sample(prompts, *a, **k)

    tiny.sample = spy
    try:
        critic(*args, seed=1, notes=["The door to the north is closed.", ""])
    finally:
        del tiny.sample
    assert "What the agent's map says: The door to the north is closed.\nGive" in seen[0]
    assert "map says" not in seen[1]
    with pytest.raises(ValueError, match="differ in length"):
        critic(*args, notes=["one"])


def test_rlaw_actor_answers_json_with_an_admissible_action(tiny):
    role = RLAWActor(tiny)
    out = role(["t"] * 3, OBS, ACTIONS, critiques=[None, "too slow", None], seed=5)
    for o, acts in zip(out, ACTIONS, strict=True):
        assert o.action in acts
        answer = (
            role.assets.prefix(thought=o.thought)
            + json.dumps(o.action)[1:-1]
            + role.assets.settings["action_suffix"]
        )
        assert json.loads(answer) == o.as_json()
        jsonschema.validate(o.as_json(), role.assets.schema)


def test_empty_batches_return_empty_lists(tiny):
    assert TripletExtractor(tiny)([]) == []
    assert ActionProposal(tiny)([], [], [], []) == []
    assert ProgressModel(tiny)([], [], [], []) == []


def test_complete_triplets_keeps_only_closed_groups():
    from smcplan.llm.roles.triplets import complete_triplets

    text = '{"triplets": [["a", "b\\"q", "c"], ["x","y","z"], ["p", "q'
    assert complete_triplets(text) == [["a", 'b"q', "c"], ["x", "y", "z"]]


def test_cut_answers_are_completed_into_valid_output(tiny):
    # a budget of 1 free token cuts nearly every thought/reason: the roles must still return
    # schema-valid output (closed strings; reflection answers chosen by Yes/No log-probability)
    refl = Reflection(tiny, n=3, settings={"max_new_tokens": 1})
    for v in refl(["t", "t"], ["c", "d"], ["a", "b"], seed=3):
        assert len(v.votes) == 3 and all(isinstance(z, str) for z in v.thoughts)
    critic = Critic(tiny, temperature=1.0, settings={"max_new_tokens": 1})
    for c in critic(["t"] * 2, ["c"] * 2, ["z"] * 2, ["a"] * 2, seed=1):
        jsonschema.validate(c.to_dict(), critic.assets.schema)


def test_unknown_settings_are_rejected(tiny):
    with pytest.raises(ValueError, match=r"unknown settings \['budget'\]; known: max_new_tokens"):
        Critic(tiny, settings={"budget": 3})
