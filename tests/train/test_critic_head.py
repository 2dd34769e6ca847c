"""The score-head critic: hidden features, the logistic head, grouped cross-validation, resume,
the CLI's typed errors, and the head plugged into RLAW (tiny random-weight model)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import InvalidArgumentError, SmcplanError
from smcplan.llm.roles.score_head import CRITIC_PREFIX, ScoreCritic, ScoreHead, hidden_features
from smcplan.train.critic import PREFIX, critic_examples, critic_labels
from smcplan.train.critic_head import cross_validate, fit_head, train_critic_head
from tests.tolerance import EPS64, gamma, gamma_prob

from .conftest import OBS, TASK

ADMISSIBLE = [["move west", "open fridge", "look around"], ["take coin", "move east"]]
GOLD = ["move west", "take coin"]


def _gold_shard(path, seeds):
    """A gold shard of one two-step episode per seed, three and two admissible actions."""
    from smcplan.train.data import SHARD_SCHEMA

    lines = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "twx:coin", "source": "gold"}]
    for seed in seeds:
        for tr in _transitions_of([seed]):
            t = tr["t"]
            lines.append(
                {
                    "kind": "transition",
                    **tr,
                    "reward": float(t == 1),
                    "done": t == 1,
                    "won": t == 1,
                    "score": float(t == 1),
                }
            )
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


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


def _head(dim=3, **kw):
    rng = np.random.default_rng(0)
    return ScoreHead(
        kw.get("layers", (-1,)),
        rng.normal(size=dim),
        rng.uniform(0.5, 2.0, size=dim),
        rng.normal(size=dim),
        kw.get("bias", 0.25),
        {"C": 0.1},
    )


# ------------------------------------------------------------------ the head


def test_the_head_is_a_logistic_regression_by_hand(tmp_path):
    head = ScoreHead((-1,), [1.0, -2.0], [2.0, 0.5], [0.5, 1.0], -0.25)
    x = np.array([[3.0, -1.0], [1.0, -2.0]])
    # z = (x - mean) / scale = [1, 2] and [0, 0]; logit = 0.5 + 2 - 0.25 = 2.25 and -0.25
    assert head.logits(x).tolist() == [2.25, -0.25]
    p = head.probabilities(x)
    for got, z in zip(p, [2.25, -0.25], strict=True):
        # tanh form against 1 / (1 + e^-z): each side a few float64 roundings
        assert abs(got - 1 / (1 + math.exp(-z))) <= 2 * gamma(8, EPS64)
    assert head.probabilities(np.array([[1e6, 0.0]]))[0] == 1.0  # no overflow
    saved = ScoreHead.load(head.save(tmp_path / "head"))
    assert saved.layers == head.layers and saved.bias == head.bias
    assert np.array_equal(saved.weight, head.weight) and np.array_equal(saved.scale, head.scale)


def test_bad_heads_and_features_are_typed_errors(tmp_path):
    with pytest.raises(InvalidArgumentError, match="differ in size"):
        ScoreHead((-1,), [0.0], [1.0, 1.0], [1.0], 0.0)
    with pytest.raises(InvalidArgumentError, match="scale must be positive"):
        ScoreHead((-1,), [0.0], [0.0], [1.0], 0.0)
    with pytest.raises(InvalidArgumentError, match="layers"):
        ScoreHead((), [0.0], [1.0], [1.0], 0.0)
    with pytest.raises(InvalidArgumentError, match=r"\(n, 3\)"):
        _head().logits(np.zeros((2, 4)))
    with pytest.raises(InvalidArgumentError, match="not a score head folder"):
        ScoreHead.load(tmp_path)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=8))
def test_probabilities_lie_in_0_1_and_follow_the_logits(values):
    head = _head(dim=1)
    x = np.asarray(values).reshape(-1, 1)
    p, z = head.probabilities(x), head.logits(x)
    assert np.all((p >= 0) & (p <= 1))
    order = np.argsort(z, kind="stable")
    assert np.all(np.diff(p[order]) >= 0)  # monotone in the logit


# ------------------------------------------------------------------ fitting


def test_grouped_cross_validation_ranks_a_separating_feature_perfectly():
    """Column 0 is the label plus noise smaller than the gap (separable), column 1 noise: the
    out-of-fold logistic scores of column 0 order every positive above every negative (AUC 1
    exactly); the noise column scores near chance."""
    rng = np.random.default_rng(0)
    y = np.array([1, 0, 0] * 20)
    groups = [f"e{i // 6}" for i in range(len(y))]  # 10 episodes of two states
    x = np.stack([y + rng.uniform(-0.4, 0.4, len(y)), rng.normal(size=len(y))], axis=1)
    table = cross_validate(x, y, groups, [[0], [1]], cs=[0.1, 1.0], folds=5)
    assert [(r["block"], r["C"]) for r in table] == [(0, 0.1), (0, 1.0), (1, 0.1), (1, 1.0)]
    assert [r["auc"] for r in table[:2]] == [1.0, 1.0]
    assert all(r["auc"] < 0.8 for r in table[2:])
    head = fit_head(x[:, :1], y, (-1,), 1.0)
    assert head.probabilities(x[:, :1])[y == 1].min() > head.probabilities(x[:, :1])[y == 0].max()
    with pytest.raises(InvalidArgumentError, match="episodes to split"):
        cross_validate(x, y, ["e"] * len(y), [[0]], folds=2)
    with pytest.raises(InvalidArgumentError, match="one class only"):
        fit_head(x, np.zeros(len(y)), (-1,), 1.0)


# ------------------------------------------------------------------ features on the tiny model


def test_the_head_reads_the_position_of_the_critics_score(tiny_lm):
    assert CRITIC_PREFIX == PREFIX  # the generative critic writes its score right after it
    examples = critic_examples(critic_labels(_transitions_of(range(2))), None)
    prompts = [ex["prompt"] for ex in examples]
    batched = hidden_features(tiny_lm, prompts, (-1, 1), batch=4)
    model = tiny_lm.model
    c = model.config
    assert batched.shape == (len(prompts), 2 * c.hidden_size)
    import torch

    # one prompt at a time, read by hand at its last token: padding changes no real position
    g = model.model.norm.weight.detach().double().abs().max().item()
    for i, prompt in enumerate(prompts):
        ids = tiny_lm.encode_prompt(prompt, assistant_prefix=CRITIC_PREFIX)
        assert tiny_lm.tokenizer.decode(ids).endswith(CRITIC_PREFIX)
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_hidden_states=True)
        last = out.hidden_states[-1][0, -1].double().numpy()
        # hidden_states[-1] is the final RMSNorm's output: |h_j| <= sqrt(d) max|g|; two float32
        # computations of it (batch shapes differ) differ by at most twice the forward error
        # of network_logprob_tol's dz term with that magnitude
        k = max(c.hidden_size, c.intermediate_size, len(ids))
        bound = math.sqrt(c.hidden_size) * g
        tol = 2 * (c.num_hidden_layers * gamma_prob(k) + gamma_prob(c.hidden_size)) * bound
        assert np.max(np.abs(batched[i, : c.hidden_size] - last)) <= tol
        assert np.max(np.abs(last)) <= bound * (1 + gamma(c.hidden_size))


def _transitions_of(seeds):
    out = []
    for seed in seeds:
        for t in range(2):
            out.append(
                {
                    "episode": f"twx:coin/{seed}",
                    "seed": seed,
                    "t": t,
                    "task": TASK,
                    "observation": OBS[t],
                    "action": GOLD[t],
                    "next_observation": OBS[t + 1],
                    "facts": [["agent", "in", "kitchen"]],
                    "admissible": ADMISSIBLE[t],
                }
            )
    return out


def test_features_need_an_in_process_model_and_real_layers(tiny_lm):
    class Remote:
        pass

    with pytest.raises(InvalidArgumentError, match="in-process transformers"):
        hidden_features(Remote(), [[{"role": "user", "content": "x"}]])
    with pytest.raises(InvalidArgumentError, match="outside the model"):
        hidden_features(tiny_lm, [[{"role": "user", "content": "x"}]], (99,))
    with pytest.raises(SmcplanError, match="batch"):
        hidden_features(tiny_lm, [[{"role": "user", "content": "x"}]], batch=0)


# ------------------------------------------------------------------ the trainer end to end


def test_train_resume_and_rlaw_plug_in(tmp_path, monkeypatch):
    """Train on 10 episodes (50 examples, 4 cache chunks); a run stopped after the first chunk
    and resumed gives the same features and head; the head plugs into RLAW through
    ``critic_path`` and scores the actor's proposals with the actor's own model."""
    from smcplan.agents import make
    from smcplan.llm.testing import tiny_model, tiny_model_path

    shard = _gold_shard(tmp_path / "gold.jsonl", range(10000, 10010))
    base = str(tiny_model_path())
    kw = dict(model=base, map_notes=False, negatives_per_state=None, threads=1, progress=False)
    full = train_critic_head([shard], tmp_path / "full", **kw)
    assert (full["examples"], full["positives"], full["features_cached"]) == (50, 20, 0)
    assert len(full["cv"]) == 8 and full["cv_auc"] == max(r["auc"] for r in full["cv"])

    from smcplan.llm.roles import score_head

    calls = {"n": 0}
    original = score_head.hidden_features

    def stop_after_one_chunk(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(score_head, "hidden_features", stop_after_one_chunk)
    with pytest.raises(KeyboardInterrupt):
        train_critic_head([shard], tmp_path / "cut", **kw)
    monkeypatch.setattr(score_head, "hidden_features", original)
    resumed = train_critic_head([shard], tmp_path / "cut", resume=True, **kw)
    assert resumed["features_cached"] == 16
    a = np.load(tmp_path / "full" / "features.npz")["features"]
    b = np.load(tmp_path / "cut" / "features.npz")["features"]
    assert np.array_equal(a, b)  # the same forward passes, chunk by chunk
    assert (resumed["C"], resumed["layers"], resumed["cv_auc"]) == (
        full["C"],
        full["layers"],
        full["cv_auc"],
    )
    with pytest.raises(InvalidArgumentError, match="start without resume"):
        train_critic_head([shard], tmp_path / "cut", resume=True, **{**kw, "max_examples": 20})

    lm = tiny_model()
    agent = make("rlaw", lm=lm, critic_path=full["weights"])
    assert isinstance(agent.critic, ScoreCritic) and agent.critic.lm is lm
    assert agent.critic_notes is False
    # the critic's prompt for (state 0, its gold action) is the first training example's
    first = json.loads(open(tmp_path / "full" / "examples.jsonl").readline())
    row = critic_labels(_transitions_of([10000]))[0]
    assert (first["action"], first["label"]) == (row["action"], 1)
    head = ScoreHead.load(full["weights"])
    (want,) = head.probabilities(hidden_features(lm, [first["prompt"]], head.layers))
    (got,) = agent.critic(
        [row["task"]], [_situation(row)], [f"I will {row['action']}."], [row["action"]]
    )
    assert got.critique_score == float(want)  # the same prompt, the same forward pass
    assert 0.0 < got.critique_score < 1.0 and got.reason.startswith("score head")


def _situation(row):
    from smcplan.agents.context import Context

    return Context(
        row["task"], row["observation"], triplets=[tuple(f) for f in row["facts"]]
    ).situation()


def test_the_cli_refuses_bad_options(tmp_path, capsys):
    from smcplan.train.cli import main

    shard = _gold_shard(tmp_path / "gold.jsonl", [10000])
    base = ["critic-head", "--data", str(shard), "--out", str(tmp_path / "o")]
    for extra, needle in (
        (["--max-steps", "3"], "--max-steps=3"),
        (["--opt", "C=[-1]"], "--opt C (e.g. [0.01,0.1]) must lie in (0, inf]; got -1"),
        (["--opt", 'C="x"'], "--opt C must be a finite number; got 'x'"),
        (["--opt", "map_notes=2"], "--opt map_notes must be a boolean; got 2"),
        (["--opt", "layers=[1]"], "unknown option 'layers'"),
    ):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=4).filter(
        lambda cs: any(c <= 0 for c in cs)
    )
)
def test_a_grid_with_a_non_positive_c_is_refused_before_any_work(tmp_path_factory, cs):
    out = tmp_path_factory.mktemp("grid")
    with pytest.raises(InvalidArgumentError, match="positive numbers"):
        train_critic_head([out / "never-read.jsonl"], out / "o", cs=cs)
    assert not (out / "o").exists()  # nothing written
