"""GRPO-MR on a policy head: the objective's exact gradients, the head and its features, learning
on the toy corridor (tests/train/toy_corridor.py), resume after SIGKILL, typed errors.

Where the thresholds come from (the corridor: LENGTH 3, HORIZON 4, 12 candidates a step):

* **chance**: the uniform head wins with probability exactly 7/81 (toy_corridor's docstring);
  every probability below is computed exactly by enumerating the 12^4 trajectories
  (``exact_metrics``), so no threshold needs a sampling margin;
* **≥ 90 %** is the target; the success can pass it only once P(move forward) ≥ 0.92
  (success = p^3 (3 - 2p) when the other actions share 1 - p), i.e. the other actions' mass
  falls from 2/3 to 0.08.  The clip lets a sampled candidate's probability fall by at most a
  factor 1 - ε = 0.8 per iteration (up to spill-over through shared weights), so that takes
  about log(8.3) / log(1/0.8) ≈ 10 iterations at best; the budget is three times that, **30**.
  With α < 1 the outcome term has weight α, so the budget is 30/α when the process term cannot
  help (the tiny model's features, below);
* **the tie** (every episode won): GRPO's advantages are exactly 0 ((R - mean)/(sd + eps) with
  R - mean = 0), the surrogate's gradient is 0 and the KL's gradient at w = w_ref is 0, so the
  head cannot move by a single bit.  GRPO-MR's explore steps have reward 1 on a new action and
  0 on a repeated one, normalised within the explore group: its process term follows
  ∇ P(new action | explore).  The clip moves the odds new : tried within explore by at most
  (1 + ε)/(1 - ε) = 1.5 per iteration, from 0.60/0.40 to 0.9/0.1 in ≥ log(6)/log(1.5) ≈ 4.4
  iterations; budget **20** (a signal that fades as repeats become rare).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, SmcplanError
from smcplan.llm.roles.policy_head import (
    FeatureCache,
    LMFeatures,
    PolicyHead,
    candidate_features,
    candidate_pairs,
    candidate_text,
    state_prompt,
    state_text,
)
from smcplan.train.grpo_mr import GRPOMRConfig, grpo_mr_advantages
from smcplan.train.grpo_mr_head import HeadGRPOConfig, train_grpo_mr_head
from smcplan.train.head_objective import (
    fit_max_likelihood,
    make_batch,
    nll,
    policy_update,
    surrogate,
)
from tests.tolerance import EPS64, gamma, gamma_prob

from .toy_corridor import ACTIONS, HORIZON, ROOT, Corridor, ToyFeatures, exact_metrics

SEEDS, GROUP, LR = (0, 1), 8, 5.0


def _config(out, **kw):
    base = dict(out=out, seeds=SEEDS, group_size=GROUP, max_steps=HORIZON, learning_rate=LR)
    return HeadGRPOConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


# ------------------------------------------------------------------ the objective


def _random_batch(seed=0, steps=5, d=6, spread=0.3):
    rng = np.random.default_rng(seed)
    z = [rng.normal(size=(int(rng.integers(2, 6)), d)) / np.sqrt(d) for _ in range(steps)]
    chosen = [int(rng.integers(len(x))) for x in z]
    ref = [rng.normal(size=len(x)) for x in z]
    ref = [r - np.log(np.exp(r).sum()) for r in ref]
    old = [float(r[k]) + rng.uniform(-spread, spread) for r, k in zip(ref, chosen, strict=True)]
    return make_batch(z, chosen, rng.normal(size=steps), old, ref), rng.normal(size=d)


def test_the_gradients_are_exact():
    # central differences: truncation h^2/6 |f'''| and rounding ~ EPS64 |f| / h; with h = 1e-5
    # and |f'''| <= (max |z| terms) ~ 10 that is ~ 2e-10 + 2e-11: 1e-8 bounds both by far
    batch, w = _random_batch()
    h = 1e-5
    for fn in (lambda v: surrogate(v, batch, 0.2, 0.1)[:2], lambda v: nll(v, batch, 0.01)):
        _, grad = fn(w)
        for j in range(w.size):
            e = np.zeros_like(w)
            e[j] = h
            fd = (fn(w + e)[0] - fn(w - e)[0]) / (2 * h)
            assert abs(fd - grad[j]) <= 1e-8, (j, fd, grad[j])


def test_the_clip_and_the_kl_by_hand():
    z = [np.array([[1.0, 0.0], [0.0, 1.0]])]
    ref = [np.log([0.5, 0.5])]
    # w = 0: pi = (1/2, 1/2); old log-prob log(1/4): ratio 2 > 1 + 0.2 with A = 1 -> clipped
    clipped = make_batch(z, [0], [1.0], [math.log(0.25)], ref)
    loss, grad, stats = surrogate(np.zeros(2), clipped, 0.2, 0.0)
    assert loss == pytest.approx(-1.2, abs=4 * EPS64) and stats["clip_fraction"] == 1.0
    assert np.all(grad == 0.0)
    # ratio 1: the gradient is -A (z_c - zbar) = -(1/2, -1/2)
    plain = make_batch(z, [0], [1.0], [math.log(0.5)], ref)
    _, grad, _ = surrogate(np.zeros(2), plain, 0.2, 0.0)
    np.testing.assert_allclose(grad, [-0.5, 0.5], atol=4 * EPS64)
    # at the reference the KL and its gradient are 0; away from it the KL is positive
    _, grad, stats = surrogate(np.zeros(2), make_batch(z, [0], [0.0], [math.log(0.5)], ref))
    assert stats["kl"] == 0.0 and np.all(grad == 0.0)
    assert surrogate(np.array([1.0, -1.0]), plain, 0.2, 1.0)[2]["kl"] > 0


def test_zero_advantages_leave_the_weights_bitwise_unchanged():
    from smcplan.llm.roles.policy_head import log_softmax

    rng = np.random.default_rng(1)
    z = [rng.normal(size=(n, 6)) for n in (2, 3, 5)]
    # w = 0 and the reference uniform: log pi = log pi_ref = -log n exactly, so d = 0
    batch = make_batch(z, [0, 2, 4], [0.0] * 3, [-math.log(n) for n in (2, 3, 5)],
                       [log_softmax(np.zeros(len(x))) for x in z])  # fmt: skip
    w0 = np.zeros(6)
    w1, stats = policy_update(w0, batch, 5.0, 10)
    assert np.array_equal(w1, w0) and stats["grad_norm_first"] == 0.0


def test_the_cold_start_fit_is_the_penalised_optimum():
    batch, _ = _random_batch(seed=3, steps=12)
    w, info = fit_max_likelihood(batch, l2=0.01)
    _, grad = nll(w, batch, 0.01)
    # L-BFGS stops at gtol 1e-9 on the projected gradient: the optimum of a strongly convex loss
    assert info["converged"] and np.linalg.norm(grad, np.inf) <= 1e-8
    assert info["nll"] < nll(np.zeros_like(w), batch, 0.01)[0]


# ------------------------------------------------------------------ the head and its features


def test_state_text_shows_the_tried_actions_and_the_recent_steps():
    steps = [("planning", "look around", "A room."), ("explore", "move forward", "Room 1.")]
    text = state_text("Find the coin.", steps, "Room 1.", recent=1)
    assert "Actions tried: look around, move forward" in text
    assert "> explore: move forward\nRoom 1." in text and "> planning" not in text
    assert state_text("t", [], "o", recent=3) == "Task: t\nActions tried: none\nNow: o"
    assert candidate_pairs(("explore",), ["a", "b", "a"]) == [("explore", "a"), ("explore", "b")]
    with pytest.raises(InvalidArgumentError, match="at least one tag and one admissible"):
        candidate_pairs(("explore",), [])


def test_candidate_features_are_one_forward_pass_per_candidate(tiny_lm):
    import torch

    model, c = tiny_lm.model, tiny_lm.model.config
    state = state_text("Find the coin.", [("explore", "move back", "Room 0.")], "Room 0.")
    texts = [candidate_text(g, a) for g, a in candidate_pairs(("planning", "explore"), ACTIONS)]
    got = candidate_features(tiny_lm, state_prompt(state), texts, (-1, 1), batch=4)
    assert got.shape == (len(texts), 2 * c.hidden_size)
    g = model.model.norm.weight.detach().double().abs().max().item()
    for i, text in enumerate(texts):
        ids = tiny_lm.encode_prompt(state_prompt(state), assistant_prefix=text)
        with torch.no_grad():
            want = model(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0, -1]
        # the last layer is the final RMSNorm's output, |h| <= sqrt(d) max|g|: two float32
        # computations (a shared cached prefix against one pass) differ by at most twice the
        # forward error bound of tests/train/test_critic_head.py
        k = max(c.hidden_size, c.intermediate_size, len(ids))
        bound = math.sqrt(c.hidden_size) * g
        tol = 2 * (c.num_hidden_layers * gamma_prob(k) + gamma_prob(c.hidden_size)) * bound
        assert np.max(np.abs(got[i, : c.hidden_size] - want.double().numpy())) <= tol
        assert np.max(np.abs(want.double().numpy())) <= bound * (1 + gamma(c.hidden_size))


def test_a_full_cache_returns_the_rows_a_call_hit_even_when_that_call_evicts_them():
    """A lookup that hits the oldest entries and adds new ones past ``max_entries`` returns the
    rows it hit (read before the oldest are dropped; a 16-iteration run on SmolLM2 died here
    with a KeyError once the cache held 50,000 entries)."""
    cache = FeatureCache(max_entries=2)

    def compute(missing):
        return np.array([[float(10 + i), 2.0] for i in missing])

    first = cache.lookup("f", "s", ["x", "y"], compute)
    out = cache.lookup("f", "s", ["x", "u", "v"], compute)  # hits x, adds u and v: 4 > 2
    assert out[0].tolist() == first[0].tolist()
    assert out[1:].tolist() == [[11.0, 2.0], [12.0, 2.0]]
    assert list(cache.rows) == [FeatureCache.key("f", "s", c) for c in ("u", "v")]


def test_the_feature_cache_counts_evicts_and_round_trips(tmp_path):
    cache, calls = FeatureCache(max_entries=3), []

    def compute(missing):
        calls.append(list(missing))
        return np.array([[float(i), 1.0] for i in missing])

    a = cache.lookup("f", "s", ["x", "y"], compute)
    b = cache.lookup("f", "s", ["y", "z"], compute)
    assert calls == [[0, 1], [1]] and (cache.hits, cache.misses) == (1, 3)
    assert b[0].tolist() == a[1].tolist()
    cache.lookup("f", "t", ["x"], compute)  # a fourth entry: the oldest ("s", "x") goes
    assert len(cache.rows) == 3 and FeatureCache.key("f", "s", "x") not in cache.rows
    cache.save(tmp_path / "f.npz")
    again = FeatureCache().load(tmp_path / "f.npz")
    assert list(again.rows) == list(cache.rows)
    assert all(np.array_equal(again.rows[k], cache.rows[k]) for k in cache.rows)


def test_the_head_round_trips_and_refuses_bad_input(tmp_path):
    rng = np.random.default_rng(0)
    head = PolicyHead((-1, 1), rng.normal(size=4), rng.uniform(1, 2, 4), rng.normal(size=4),
                      ("explore", "monitor"), {"recent": 2})  # fmt: skip
    again = PolicyHead.load(head.save(tmp_path / "h"))
    x = rng.normal(size=(3, 4))
    assert np.array_equal(again.log_probs(x), head.log_probs(x)) and again.info == head.info
    assert abs(np.exp(head.log_probs(x)).sum() - 1.0) <= gamma(4, EPS64) * 4
    with pytest.raises(InvalidArgumentError, match="not a policy head folder"):
        PolicyHead.load(tmp_path)
    with pytest.raises(InvalidArgumentError, match=r"reads \(n, 4\)"):
        head.log_probs(np.zeros((2, 5)))
    with pytest.raises(InvalidArgumentError, match="distinct tags"):
        PolicyHead.uniform(4, ("explore", "explore"))


# ------------------------------------------------------------------ learning on the corridor


@pytest.mark.parametrize("alpha", [1.0, 0.5], ids=["grpo", "grpo-mr"])
def test_grpo_and_grpo_mr_learn_to_win_from_chance(alpha, tmp_path):
    features = ToyFeatures()
    run = train_grpo_mr_head(_config(tmp_path, alpha=alpha, iterations=30), env=Corridor(),
                             features=features, progress=False)  # fmt: skip
    start = exact_metrics(PolicyHead.load(tmp_path / "reference"), features)
    assert abs(start["success"] - 7 / 81) <= 64 * EPS64
    end = exact_metrics(PolicyHead.load(run["weights"]), features)
    assert end["success"] >= 0.9, (alpha, end)


def test_in_a_tie_only_grpo_mr_moves_the_explore_rule(tmp_path):
    features, env = ToyFeatures(), Corridor(always_win=True)
    runs = {
        alpha: train_grpo_mr_head(
            _config(tmp_path / str(alpha), alpha=alpha, iterations=20),
            env=env,
            features=features,
            progress=False,
        )  # fmt: skip
        for alpha in (1.0, 0.5)
    }
    assert all(m["success_rate"] == 1.0 for r in runs.values() for m in r["log"])
    ref = PolicyHead.load(tmp_path / "1.0" / "reference")
    grpo = PolicyHead.load(runs[1.0]["weights"])
    assert np.array_equal(grpo.weight, ref.weight) and not np.any(grpo.weight)
    assert all(m["advantage_abs_mean"] == 0.0 for m in runs[1.0]["log"])
    before = exact_metrics(ref, features, always_win=True)["explore_new_rate"]
    assert exact_metrics(grpo, features, always_win=True)["explore_new_rate"] == before
    after = exact_metrics(PolicyHead.load(runs[0.5]["weights"]), features, always_win=True)
    assert before < 0.61 and after["explore_new_rate"] >= 0.9, (before, after)


@pytest.mark.parametrize("alpha", [1.0, 0.5], ids=["grpo", "grpo-mr"])
def test_the_tiny_models_hidden_states_learn_to_win(alpha, tiny_lm, tmp_path):
    # the tiny random model's last-token states tell the actions apart (so the head learns
    # "move forward"), but not whether an action was tried before (GRPO-MR's explore rule:
    # its rate stays near 0.6 in a tie), so its process term cannot help: budget 30 / alpha
    features = LMFeatures(tiny_lm, (-1, 1))
    iterations = math.ceil(30 / alpha)
    run = train_grpo_mr_head(_config(tmp_path, alpha=alpha, iterations=iterations),
                             env=Corridor(), features=features, progress=False)  # fmt: skip
    assert run["log"][1]["feature_cache"]["hits"] > 0
    end = exact_metrics(PolicyHead.load(run["weights"]), features)
    assert end["success"] >= 0.9, (alpha, end)


# ------------------------------------------------------------------ checkpoints and resume

CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from smcplan.llm.roles.policy_head import LMFeatures
    from smcplan.llm.testing import tiny_model
    from smcplan.train.grpo_mr_head import HeadGRPOConfig, train_grpo_mr_head
    from tests.train.toy_corridor import Corridor

    env = Corridor(hang_at_reset={hang}, marker={marker!r})
    train_grpo_mr_head(HeadGRPOConfig(**{config}), env=env,
                       features=LMFeatures(tiny_model(), (-1, 1)), progress=False)
    """
)


def test_resume_after_sigkill_ends_with_the_uninterrupted_head(tiny_lm, tmp_path):
    out, marker = tmp_path / "killed", tmp_path / "hung"
    config = dict(seeds=(0, 1), group_size=4, max_steps=HORIZON, learning_rate=LR,
                  iterations=4, alpha=0.5)  # fmt: skip
    per_iteration = len(config["seeds"]) * config["group_size"]
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(
        root=ROOT, hang=2 * per_iteration + 3, marker=str(marker),
        config=repr({**config, "out": str(out)}),
    ))  # fmt: skip
    env = {**os.environ, "TORCH_COMPILE_DISABLE": "1", "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 180
    while not marker.exists():  # hung in the middle of iteration 2 (its third reset)
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the child never reached iteration 2"
        time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL and not (out / "head").exists()
    state = json.loads((out / "state.json").read_text())
    assert state == {"completed": 2, "checkpoint": "checkpoints/iter-0001"}
    resumed = train_grpo_mr_head(
        HeadGRPOConfig(out=out, resume=True, **config),
        env=Corridor(),
        features=LMFeatures(tiny_lm, (-1, 1)),
        progress=False,
    )
    straight = train_grpo_mr_head(HeadGRPOConfig(out=tmp_path / "straight", **config),
                                  env=Corridor(), features=LMFeatures(tiny_lm, (-1, 1)),
                                  progress=False)  # fmt: skip
    assert resumed["resumed_from"] == 2 and straight["resumed_from"] is None
    a, b = PolicyHead.load(resumed["weights"]), PolicyHead.load(straight["weights"])
    assert np.array_equal(a.weight, b.weight) and np.array_equal(a.mean, b.mean)
    assert np.array_equal(a.scale, b.scale) and np.any(a.weight)

    def same(m):
        return {k: v for k, v in m.items() if k != "seconds"}

    assert [same(m) for m in resumed["log"]] == [same(m) for m in straight["log"]]


def test_a_finished_run_is_not_overwritten_and_a_changed_resume_is_refused(tmp_path):
    features = ToyFeatures()
    train_grpo_mr_head(_config(tmp_path, iterations=1), env=Corridor(), features=features,
                       progress=False)  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="already holds a grpo-mr-head run"):
        train_grpo_mr_head(_config(tmp_path, iterations=1), env=Corridor(), features=features)
    with pytest.raises(InvalidArgumentError, match=r"resume: alpha differ .*alpha=0\.5"):
        train_grpo_mr_head(_config(tmp_path, iterations=2, alpha=0.7, resume=True),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    more = train_grpo_mr_head(_config(tmp_path, iterations=2, resume=True), env=Corridor(),
                              features=features, progress=False)  # fmt: skip
    assert more["resumed_from"] == 1 and len(more["log"]) == 2


# ------------------------------------------------------------------ typed errors


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"group_size": 1}, InvalidArgumentError, "group_size must be >= 2; got 1"),
        ({"group_size": 1.0}, ArgumentTypeError, "group_size must be an integer"),
        ({"alpha": 1.5}, InvalidArgumentError, r"alpha must lie in \[0, 1\]; got 1.5"),
        ({"alpha": -0.1}, InvalidArgumentError, r"alpha must lie in \[0, 1\]; got -0.1"),
        ({"alpha": float("nan")}, InvalidArgumentError, "alpha must be a finite number"),
        ({"alpha": True}, ArgumentTypeError, "alpha must be a real number"),
    ],
)
def test_a_group_of_one_and_alpha_outside_0_1_are_refused(kwargs, error, needle, tmp_path):
    fix = "give group_size >= 2" if "group_size" in kwargs else "give a number in [0, 1]"
    for config in (_config(tmp_path, **kwargs), GRPOMRConfig(out=tmp_path, **kwargs)):
        with pytest.raises(error, match=needle) as info:
            config.validated()
        assert isinstance(info.value, SmcplanError) and fix in str(info.value)
    if "alpha" in kwargs:
        with pytest.raises(error, match=needle):
            grpo_mr_advantages([1.0, 0.0], [[0.0], [0.0]], [["explore"], ["explore"]], **kwargs)
    assert not (tmp_path / "state.json").exists()


@pytest.mark.parametrize(
    ("opt", "needle"),
    [
        ("group_size=1", "group_size must be >= 2; got 1: GRPO normalises"),
        ("alpha=2", "alpha must lie in [0, 1]; got 2: alpha mixes"),
        ("normalize=z", "--opt normalize must be one of mean_std, mean; got 'z'"),
        ("lr2=1", "unknown option 'lr2' for trainer 'grpo-mr-head'"),
    ],
)
def test_the_cli_refuses_bad_options_in_one_line(opt, needle, capsys, tmp_path):
    from smcplan.cli import main

    rc = main(["train", "grpo-mr-head", "--out", str(tmp_path / "o"), "--opt", opt])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ cold start and the agent


def _gold_shard(path):
    from smcplan.train.data import SHARD_SCHEMA

    lines = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "toy:corridor", "source": "gold"}]
    for seed in (0, 1):
        obs = "You are in room 0."
        for t in range(3):
            nxt = "You take the coin." if t == 2 else f"You are in room {t + 1}."
            lines.append({"kind": "transition", "episode": f"c/{seed}", "seed": seed, "t": t,
                          "task": Corridor.task, "observation": obs, "action": "move forward",
                          "next_observation": nxt, "reward": float(t == 2), "done": t == 2,
                          "won": t == 2, "score": float(t == 2),
                          "admissible": list(ACTIONS), "facts": []})  # fmt: skip
            obs = nxt
        lines.append({"kind": "episode", "episode": f"c/{seed}", "seed": seed, "won": True,
                      "steps": 3, "score": 1.0})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_cold_start_fits_the_tagged_gold_steps_and_the_agent_plays_them(tiny_lm, tmp_path):
    from smcplan.agents.rlvmr import RLVMRAgent

    shard = _gold_shard(tmp_path / "gold.jsonl")
    run = train_grpo_mr_head(_config(tmp_path / "run", data=(shard,), iterations=1),
                             env=Corridor(), features=LMFeatures(tiny_lm, (-1, 1)),
                             progress=False)  # fmt: skip
    cold = run["cold_start"]
    # 6 gold steps (annotate: planning first, then monitor for the repeated "move forward" and
    # for the winning step), 12 candidates each: with 128 features for 3 distinct states the
    # fit puts every gold (tag, action) first
    assert cold["examples"] == 6 and cold["accuracy"] == 1.0
    assert cold["nll"] < -math.log(cold["chance"])
    ref = PolicyHead.load(tmp_path / "run" / "reference")
    agent = RLVMRAgent(tiny_lm, policy_head=str(tmp_path / "run" / "reference"), seed=0)
    env = Corridor()
    obs, info = env.reset(0)
    agent.reset(env.task, obs, list(ACTIONS))
    tags = []
    for _ in range(HORIZON):
        step = agent.act(obs, list(ACTIONS), info)
        tags.append(step.meta["rlvmr_tag"] if "rlvmr_tag" in step.meta else None)
        obs, _, done, info = env.step(step.action)
        if done:
            break
    agent.end_episode(bool(info["won"]), info["score"])
    assert info["won"] and tags == ["planning", "monitor", "monitor"]  # the gold steps, argmax
    assert agent.episode_return == 1.0  # planning on a success 1, monitor 0
    assert ref.info["cold_start"]["examples"] == 6


# ------------------------------------------------------------------ held-out curves


def test_iteration_seeds_rotate_through_the_seed_list():
    from smcplan.train.head_episodes import iteration_seeds

    seeds = (10, 11, 12, 13, 14)
    assert iteration_seeds(seeds, 0, 7) == list(seeds)  # 0: all of them, every iteration
    assert iteration_seeds(seeds, 9, 3) == list(seeds)
    assert [iteration_seeds(seeds, 2, k) for k in range(4)] == [
        [10, 11], [12, 13], [14, 10], [11, 12]
    ]  # fmt: skip


def test_episode_metrics_count_repeats_invalid_steps_and_tags():
    from smcplan.train.head_episodes import episode_metrics

    eps = [
        {"won": True, "steps": 3, "tags": ["planning", "explore", "explore"],
         "actions": ["a", "b", "a"], "rewards": [1.0, 0.5, 0.0], "explore_new": [True, False],
         "invalid": [False, True, False]},
        {"won": False, "steps": 1, "tags": ["monitor"], "actions": ["c"], "rewards": [-0.5],
         "explore_new": [], "invalid": [True]},
    ]  # fmt: skip
    m = episode_metrics(eps, ("planning", "explore", "reflection", "monitor"))
    assert m["success_rate"] == 0.5 and m["steps"] == 4 and m["episodes"] == 2
    assert m["repeat_rate"] == 1 / 4 and m["invalid_rate"] == 2 / 4
    assert m["tags"] == {"planning": 1, "explore": 2, "reflection": 0, "monitor": 1}
    assert m["explore_new_rate"] == 0.5 and m["process_return_mean"] == (1.5 - 0.5) / 2


def test_the_held_out_curve_is_the_greedy_head_before_and_after_training(tmp_path):
    from smcplan.train.head_episodes import evaluate_head

    features, env, held = ToyFeatures(), Corridor(), (5, 6, 7)
    run = train_grpo_mr_head(
        _config(tmp_path, alpha=0.5, iterations=4, seeds_per_iteration=1, eval_seeds=held,
                eval_every=2),
        env=env, features=features, progress=False,
    )  # fmt: skip
    assert [m["won"].keys() for m in run["log"]] == [{"0"}, {"1"}, {"0"}, {"1"}]
    assert [("heldout" in m) for m in run["log"]] == [False, True, False, True]
    assert set(run["heldout_success_rate"]) == {2, 4}
    again = evaluate_head(PolicyHead.load(run["weights"]), env, held, features, HORIZON, 3)
    last = run["log"][-1]["heldout"]
    assert {k: last[k] for k in ("won", "actions", "steps")} == {
        k: again[k] for k in ("won", "actions", "steps")
    }
    start = json.loads((tmp_path / "heldout-start.json").read_text())
    ref = evaluate_head(PolicyHead.load(tmp_path / "reference"), env, held, features, HORIZON, 3)
    assert start["won"] == ref["won"] and start["actions"] == ref["actions"]


def test_zero_iterations_is_the_cold_start_alone_evaluated(tiny_lm, tmp_path):
    shard = _gold_shard(tmp_path / "gold.jsonl")
    run = train_grpo_mr_head(
        _config(tmp_path / "run", data=(shard,), iterations=0, eval_seeds=(3,)),
        env=Corridor(), features=LMFeatures(tiny_lm, (-1, 1)), progress=False,
    )  # fmt: skip
    head, ref = PolicyHead.load(run["weights"]), PolicyHead.load(tmp_path / "run" / "reference")
    assert run["log"] == [] and np.array_equal(head.weight, ref.weight)
    assert run["heldout_start"]["episodes"] == 1 and run["heldout_start"]["won"] == {"3": True}


def test_the_agent_takes_a_head_folder_or_names_the_unknown_one(tiny_lm, tmp_path):
    from smcplan.agents.rlvmr import RLVMRAgent
    from smcplan.llm.artifacts import ArtifactError

    PolicyHead.uniform(4, ("planning", "explore")).save(tmp_path / "h")
    assert RLVMRAgent(tiny_lm, policy_head=str(tmp_path / "h")).policy_head.dim == 4
    with pytest.raises(ArtifactError, match=r"policy_head='no-such-head'.*known artifacts"):
        RLVMRAgent(tiny_lm, policy_head="no-such-head")


def test_a_resumed_run_does_not_need_the_cache_file_it_started_from(tmp_path):
    from smcplan.llm.roles.policy_head import FeatureCache
    from smcplan.train.grpo_mr_head import starting_cache

    seed = FeatureCache()
    seed.lookup("f", "s", ["a", "b"], lambda idx: np.ones((len(idx), 3)))
    seed.save(tmp_path / "start.npz")
    cfg = _config(tmp_path / "run", feature_cache=tmp_path / "start.npz")
    assert len(starting_cache(cfg).rows) == 2  # a new run starts from the file
    train_grpo_mr_head(_config(tmp_path / "run", iterations=1), env=Corridor(),
                       features=ToyFeatures(), progress=False)  # fmt: skip
    (tmp_path / "start.npz").unlink()  # e.g. a /tmp file, gone with the machine
    resumed = _config(tmp_path / "run", feature_cache=tmp_path / "start.npz", resume=True)
    assert len(starting_cache(resumed).rows) == 0  # resuming reads the run's own features.npz


def test_resuming_with_fewer_iterations_ends_the_run_at_that_checkpoint(tmp_path):
    features, env = ToyFeatures(), Corridor()
    full = train_grpo_mr_head(_config(tmp_path, iterations=4), env=env, features=features,
                              progress=False)  # fmt: skip
    short = train_grpo_mr_head(_config(tmp_path, iterations=2, resume=True), env=env,
                               features=features, progress=False)  # fmt: skip
    at_two = PolicyHead.load(tmp_path / "checkpoints" / "iter-0001" / "head")
    assert np.array_equal(PolicyHead.load(short["weights"]).weight, at_two.weight)
    assert short["log"] == full["log"][:2] and short["iterations"] == 2
