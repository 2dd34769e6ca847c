"""GRPO-MR: the advantage by hand, its properties, typed errors, and one policy update."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import InvalidArgumentError, SmcplanError
from smcplan.train.grpo_mr import (
    GRPOMRConfig,
    group_normalize,
    grpo_advantages,
    grpo_mr_advantages,
)
from tests.tolerance import llama_logprob_tol

EPS = 1e-6
U = 2.0**-52  # float64 unit roundoff (times 2)


def _two_pass_tol(lm, prompt, text: str) -> float:
    """|two float32 forward passes of other shapes| of the summed log-prob of ``text`` after
    ``prompt`` (the policy's own pass against the scoring path): tests/tolerance.py's rounding
    model in the tiny model's sizes, context = prompt + continuation."""
    n = len(lm.encode_continuation(text, add_eos=True))
    return llama_logprob_tol(lm.model, n, len(lm.encode_prompt(prompt)) + n + 1)


def _tol(n_terms: int, magnitude: float) -> float:
    """Rounding bound of a mean/std normalisation of ``n_terms`` values: each value passes
    through a sum of n terms, a square root, a division and the alpha mix (about n + 8
    roundings), each relative ``U``, scaled by the size of the result."""
    return (n_terms + 8) * U * max(1.0, magnitude)


def test_advantage_equals_the_hand_computed_example():
    # G = 3 trajectories of one task; the first won.
    outcomes = [1.0, 0.0, 0.0]
    rewards = [[1.0, 1.0], [1.0, 0.0], [-0.1, 0.0]]
    tags = [["planning", "explore"], ["explore", "explore"], [None, "monitor"]]
    # outcomes: mean 1/3, unbiased sd sqrt(((2/3)^2 + 2 (1/3)^2) / 2) = sqrt(1/3)
    s = math.sqrt(1.0 / 3.0)
    a_won, a_lost = (2.0 / 3.0) / (s + EPS), (-1.0 / 3.0) / (s + EPS)
    # explore group {1, 1, 0}: mean 2/3, sd sqrt(((1/3)^2 * 2 + (2/3)^2) / 2) = sqrt(1/3)
    e_one, e_zero = (1.0 / 3.0) / (s + EPS), (-2.0 / 3.0) / (s + EPS)
    # singleton groups (planning {1}, none {-0.1}, monitor {0}): mean 0, sd 1
    p_one, none, mon = 1.0 / (1.0 + EPS), -0.1 / (1.0 + EPS), 0.0
    alpha = 0.5
    want = [
        [alpha * a_won + (1 - alpha) * p_one, alpha * a_won + (1 - alpha) * e_one],
        [alpha * a_lost + (1 - alpha) * e_one, alpha * a_lost + (1 - alpha) * e_zero],
        [alpha * a_lost + (1 - alpha) * none, alpha * a_lost + (1 - alpha) * mon],
    ]
    got = grpo_mr_advantages(outcomes, rewards, tags, alpha=alpha, eps=EPS)
    for row_got, row_want in zip(got, want, strict=True):
        for g, w in zip(row_got, row_want, strict=True):
            assert abs(g - w) <= _tol(3, abs(w)), (g, w)
    # the released code's "mean_norm": no division by sd
    got = grpo_mr_advantages(outcomes, rewards, tags, alpha=1.0, normalize="mean")
    assert got[0] == pytest.approx([2.0 / 3.0] * 2, abs=_tol(3, 1.0))


finite = st.floats(-100.0, 100.0, allow_nan=False)


@st.composite
def groups(draw):
    g = draw(st.integers(2, 6))
    outcomes = draw(st.lists(finite, min_size=g, max_size=g))
    lengths = draw(st.lists(st.integers(1, 5), min_size=g, max_size=g))
    tag = st.sampled_from(["planning", "explore", "reflection", "monitor", None])
    rewards = [draw(st.lists(finite, min_size=n, max_size=n)) for n in lengths]
    tags = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    return outcomes, rewards, tags


@settings(max_examples=60, deadline=None)
@given(groups())
def test_alpha_one_is_vanilla_grpo(group):
    outcomes, rewards, tags = group
    vanilla = grpo_advantages(outcomes, EPS)
    got = grpo_mr_advantages(outcomes, rewards, tags, alpha=1.0, eps=EPS)
    for a, row in zip(vanilla, got, strict=True):
        assert all(v == a for v in row)  # alpha * x + 0 * y is x exactly


@settings(max_examples=60, deadline=None)
@given(groups(), st.floats(-50.0, 50.0, allow_nan=False))
def test_sums_to_zero_and_shift_invariance(group, shift):
    outcomes, rewards, tags = group
    adv = group_normalize(outcomes, EPS)
    big = max(1.0, max(abs(x) for x in outcomes))
    sd_bound = sum(abs(a) for a in adv)
    # Σ_i (R_i - mean) = 0 up to rounding of n terms of size `big`, divided by sd + eps
    spread = max(outcomes) - min(outcomes)
    if spread > 1e-3:
        assert abs(math.fsum(adv)) <= _tol(len(outcomes), sd_bound) * big / spread * 4
    # subtracting the mean is unchanged by a shift of every outcome (mean mode, exact math)
    shifted = group_normalize([x + shift for x in outcomes], EPS, "mean")
    plain = group_normalize(outcomes, EPS, "mean")
    scale = max(big, abs(shift) + big)
    for a, b in zip(shifted, plain, strict=True):
        assert abs(a - b) <= _tol(len(outcomes), scale) * 2


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"eps": 0.0}, "eps"),
        ({"normalize": "zscore"}, "normalize"),
    ],
)
def test_bad_arguments_raise_typed_errors_naming_them(kwargs, name):
    with pytest.raises(SmcplanError, match=name):
        grpo_mr_advantages([1.0, 0.0], [[0.0], [0.0]], [["explore"], ["explore"]], **kwargs)


def test_mismatched_groups_and_bad_configs_are_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="one step list per trajectory"):
        grpo_mr_advantages([1.0, 0.0], [[0.0]], [["explore"]])
    with pytest.raises(InvalidArgumentError, match="2 step rewards but 1 tags"):
        grpo_mr_advantages([1.0, 0.0], [[0.0, 1.0], [0.0]], [["explore"], ["explore"]])
    with pytest.raises(InvalidArgumentError, match="outcomes"):
        grpo_advantages([])
    with pytest.raises(SmcplanError, match="group_size"):
        GRPOMRConfig(out=tmp_path, group_size=1).validated()
    with pytest.raises(SmcplanError, match="seeds is empty"):
        GRPOMRConfig(out=tmp_path, seeds=()).validated()
    with pytest.raises(SmcplanError, match="iterations"):
        GRPOMRConfig(out=tmp_path, iterations=0.5).validated()


def test_update_group_updates_every_step_with_its_advantage_in_trajectory_order(tmp_path):
    from smcplan.train.grpo_mr import _update_group

    class Recorder:  # stands in for PolicyOptimizer: records what the update receives
        def update(self, prompts, answers, advantages):
            self.args = (prompts, answers, advantages)
            return "stats"

    group = [
        {"won": True, "prompts": ["p00", "p01"], "responses": ["a00", "a01"],
         "tags": ["planning", "explore"], "rewards": [0.5, 0.0]},
        {"won": False, "prompts": ["p10"], "responses": ["a10"], "tags": [None],
         "rewards": [-0.1]},
    ]  # fmt: skip
    cfg = GRPOMRConfig(out=tmp_path, alpha=0.3, normalize="mean")
    policy = Recorder()
    flat, stats = _update_group(policy, group, cfg)
    want = grpo_mr_advantages([1.0, 0.0], [[0.5, 0.0], [-0.1]],
                              [["planning", "explore"], [None]], 0.3, cfg.eps, "mean")  # fmt: skip
    assert flat == [*want[0], *want[1]] and stats == "stats"
    assert policy.args == (["p00", "p01", "p10"], ["a00", "a01", "a10"], flat)


def test_clipped_kl_loss_by_hand():
    torch = pytest.importorskip("torch")
    from smcplan.llm.finetune.grpo import clipped_kl_loss

    logp = torch.tensor([[math.log(0.5), math.log(0.2)]], dtype=torch.float64)
    old = torch.tensor([[math.log(0.25), math.log(0.2)]], dtype=torch.float64)
    ref = old.clone()
    mask = torch.ones_like(logp)
    # token 1: ratio 2 > 1 + 0.2, A = +1 -> min(2, 1.2) = 1.2; token 2: ratio 1 -> 1
    # KL token 1: e^(ln .25 - ln .5) - ln(.5) - 1 = 0.5 + ln 2 - 1; token 2: 0
    loss, stats = clipped_kl_loss(
        logp, old, ref, torch.tensor([1.0], dtype=torch.float64), mask, 0.2, 0.1
    )
    kl1 = 0.5 + math.log(2.0) - 1.0
    want = (-(1.2 + 1.0) + 0.1 * kl1) / 2
    assert abs(float(loss) - want) <= 16 * U * 4
    assert stats["clip_fraction"] == 0.5


@pytest.mark.slow
def test_policy_update_raises_the_logprob_of_a_positive_answer():
    pytest.importorskip("peft")
    from smcplan.llm import load_model
    from smcplan.llm.finetune.grpo import PolicyOptimizer, PolicySettings
    from smcplan.llm.testing import tiny_model_path

    lm = load_model(tiny_model_path(), device="cpu", threads=1)  # prefix cache on
    prompt = [{"role": "user", "content": "Task: find the coin. Admissible: move east"}]
    good = "<explore>try east</explore>\n<action>move east</action>"
    tol = _two_pass_tol(lm, prompt, good)  # before PEFT wraps the model
    policy = PolicyOptimizer(
        lm, None, PolicySettings(learning_rate=5e-3, epochs=3, minibatch_size=2, kl_coef=0.0)
    )
    bad = "<monitor>wait</monitor>\n<action>look around</action>"
    before = policy.sequence_logprobs([prompt, prompt], [good, bad])
    cached = lm.logprob([prompt], [good], add_eos=True)[0]  # fills the prefix cache
    assert cached == pytest.approx(before[0], abs=tol)
    stats = policy.update([prompt, prompt], [good, bad], [1.0, -1.0])
    after = policy.sequence_logprobs([prompt, prompt], [good, bad])
    assert stats.steps == 3 and stats.tokens > 0
    assert after[0] > before[0] and after[1] < before[1]
    # the rollout model is the policy, and the stale prefix cache was emptied by the update
    assert lm.logprob([prompt], [good], add_eos=True)[0] == pytest.approx(after[0], abs=tol)


@pytest.mark.slow
def test_cold_start_adapter_is_the_frozen_kl_reference(tmp_path):
    pytest.importorskip("peft")
    from smcplan.llm import load_model
    from smcplan.llm.finetune.grpo import PolicyOptimizer, PolicySettings
    from smcplan.llm.testing import tiny_model_path

    def fresh():
        return load_model(tiny_model_path(), device="cpu", threads=1, prefix_cache=False)

    prompt = [{"role": "user", "content": "Task: find the coin."}]
    good = "<explore>east</explore>\n<action>move east</action>"
    tol = _two_pass_tol(fresh(), prompt, good)
    first = PolicyOptimizer(fresh(), None, PolicySettings(learning_rate=5e-3, kl_coef=0.0))
    first.update([prompt], [good], [1.0])
    cold = first.save(tmp_path / "cold")
    policy = PolicyOptimizer(
        fresh(), cold, PolicySettings(learning_rate=5e-3, epochs=3, kl_coef=0.1)
    )
    assert policy.reference == "adapter"
    start = policy.sequence_logprobs([prompt], [good])[0]
    ids, attention, mask = policy._batch([prompt], [good])
    ref_before = float((policy._reference_logp(ids, attention) * mask).sum())
    assert ref_before == pytest.approx(start, abs=tol)  # the reference starts as the policy
    stats = policy.update([prompt], [good], [1.0])
    ref_after = float((policy._reference_logp(ids, attention) * mask).sum())
    assert ref_after == ref_before  # frozen
    assert policy.sequence_logprobs([prompt], [good])[0] > start and stats.kl > 0
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all(".default." in n for n in trainable)
