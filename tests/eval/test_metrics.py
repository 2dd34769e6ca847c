"""Metrics on hand-made logs equal hand-computed values (smcplan.eval.metrics is pure)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import ArgumentTypeError, InvalidArgumentError
from smcplan.eval.metrics import (
    EpisodeStats,
    aggregate,
    bootstrap_mean_ci,
    bootstrap_ratio_ci,
    episode_stats,
    group_metrics,
    mcnemar_exact_p,
    repeated_pair_flags,
    repetitive_flags,
    upgrade_stats,
    wilson_interval,
)
from tests.tolerance import EPS64, chain_tol, literal_tol

#: Cephes incbet's documented peak relative error for a, b in (0, 1000] (IEEE, 30000 trials)
CEPHES_INCBET_PEAK = 5.3e-12


def step(
    action, feedback, *, invalid=False, trial=0, meta=None, agent_s=0.5, env_s=0.25, score=0.0
):
    return {
        "action": action,
        "feedback": feedback,
        "score": score,
        "invalid": invalid,
        "trial": trial,
        "meta": meta or {},
        "agent_s": agent_s,
        "env_s": env_s,
    }


# --- Wilson ------------------------------------------------------------------------------------


def test_wilson_interval_matches_hand_computation_for_8_of_10():
    # p = 0.8, z² = 3.841459, denom = 1.3841459
    # centre = (0.8 + 0.1920729) / 1.3841459 = 0.716740
    # half = (1.959964 / 1.3841459) * sqrt(0.016 + 0.0096036) = 1.416009 * 0.160011 = 0.226577
    lo, hi = wilson_interval(8, 10)
    # the literals' rounding: 0.716740 to its last digit; 0.226577 (exact 0.2265777) also carries
    # the roundings of its two 6-decimal factors
    half_tol = (
        literal_tol("0.226577")
        + literal_tol("1.416009") * 0.160011
        + literal_tol("0.160011") * 1.416009
    )
    tol = literal_tol("0.716740") + half_tol
    assert lo == pytest.approx(0.716740 - 0.226577, abs=tol)
    assert hi == pytest.approx(0.716740 + 0.226577, abs=tol)


def test_mcnemar_exact_p_matches_hand_computation():
    # d discordant episodes, each A's with probability 1/2 under H0
    assert mcnemar_exact_p(4, 0) == 2 / 2**4  # 0.125: 4 wins to none is not significant
    assert mcnemar_exact_p(0, 8) == 2 / 2**8  # 0.0078
    assert mcnemar_exact_p(3, 1) == 2 * (1 + 4) / 2**4  # 0.625
    assert mcnemar_exact_p(2, 2) == 1.0  # 2 * 11/16 capped at 1
    assert mcnemar_exact_p(0, 0) == 1.0  # no discordant episode: no evidence


@settings(max_examples=60, deadline=None)  # the first example imports scipy
@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_exact_p_is_symmetric_and_equals_the_two_sided_binomial_test(a, b):
    from scipy import stats  # installed with jax, a hard dependency: never skipped
    p = mcnemar_exact_p(a, b)
    assert p == mcnemar_exact_p(b, a)
    assert 0.0 < p <= 1.0
    if a + b:
        # cross-implementation: scipy's binomial CDF is a regularised incomplete beta, whose
        # documented peak relative error for parameters <= 1000 is 5.3e-12 (Cephes incbet,
        # IEEE 0-1000), plus our float64 sum of <= 61 terms of <= 2(a + b) roundings each
        rel = CEPHES_INCBET_PEAK + chain_tol(2 * (a + b) + 61, EPS64)
        assert p == pytest.approx(stats.binomtest(a, a + b, 0.5).pvalue, rel=rel)


@pytest.mark.parametrize(
    ("a_only", "b_only", "error", "named"),
    [
        (-1, 0, InvalidArgumentError, "a_only"),
        (0, -2, InvalidArgumentError, "b_only"),
        (1.0, 0, ArgumentTypeError, "a_only"),
        (True, 0, ArgumentTypeError, "a_only"),
    ],
)
def test_mcnemar_exact_p_rejects_bad_counts(a_only, b_only, error, named):
    with pytest.raises(error, match=named):
        mcnemar_exact_p(a_only, b_only)


def test_wilson_interval_at_zero_successes_is_zero_to_z2_over_n_plus_z2():
    # k = 0: centre = half = (z²/2n)/(1 + z²/n), so lo = 0 and hi = z²/(n + z²) = 3.8415/13.8415
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0
    # z² = 3.841459 written to 6 decimals; d/dx x/(10 + x) = 10/(10 + x)² scales its rounding
    tol = literal_tol("3.841459") * 10 / 13.841459**2 + chain_tol(4, EPS64)
    assert hi == pytest.approx(3.841459 / 13.841459, abs=tol)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=200, deadline=None)
def test_wilson_interval_contains_the_estimate_and_is_mirror_symmetric(kn):
    k, n = kn
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    lo2, hi2 = wilson_interval(n - k, n)
    # float64: ~12 roundings on terms of size <= 1 + z²/n <= 1 + 3.85 (n >= 1), in two orders
    tol = chain_tol(12, EPS64) * (1 + 1.959964**2)
    assert lo == pytest.approx(1 - hi2, abs=tol)
    assert hi == pytest.approx(1 - lo2, abs=tol)


def test_wilson_interval_rejects_bad_counts():
    with pytest.raises(ValueError, match="n > 0"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="k=11, n=10"):
        wilson_interval(11, 10)


# --- bootstrap ---------------------------------------------------------------------------------


def test_bootstrap_mean_ci_of_fair_coin_sample_is_mean_pm_1_96_standard_errors():
    # 100 values, half 0 half 1: the bootstrap distribution of the mean has SD sqrt(.25/100) = .05,
    # so the percentile interval is ≈ 0.5 ± 1.96·0.05 = [0.402, 0.598]. Monte-Carlo error of a
    # 2.5% quantile with B = 4000: sqrt(q(1-q)/B)/f(x_q) = 0.00247/1.17 ≈ 0.002; 4 of those (a
    # false failure ≤ 6e-5 per bound), plus the 1/100 grid of possible means.
    x = [0.0, 1.0] * 50
    b, q, sd = 4000, 0.025, math.sqrt(0.25 / len(x))
    f_q = math.exp(-(1.959964**2) / 2) / (math.sqrt(2 * math.pi) * sd)  # normal density at x_q
    tol = 4 * math.sqrt(q * (1 - q) / b) / f_q + 1 / len(x)
    lo, hi = bootstrap_mean_ci(x, seed=3, num_resamples=b)
    assert lo == pytest.approx(0.402, abs=tol)
    assert hi == pytest.approx(0.598, abs=tol)


def test_bootstrap_is_deterministic_in_seed_and_degenerate_for_constant_values():
    x = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    assert bootstrap_mean_ci(x, seed=7) == bootstrap_mean_ci(x, seed=7)
    assert bootstrap_mean_ci([2.5] * 5) == (2.5, 2.5)
    assert bootstrap_ratio_ci([1, 2], [2, 4]) == pytest.approx((0.5, 0.5))


def test_bootstrap_ratio_ci_brackets_the_pooled_ratio():
    num, den = [0, 1, 3, 2, 0, 5], [10, 10, 12, 8, 9, 11]
    lo, hi = bootstrap_ratio_ci(num, den, seed=0)
    assert lo < sum(num) / sum(den) < hi


# --- repetitive actions ------------------------------------------------------------------------


def test_repeated_pair_flags_need_same_action_and_same_observation_within_a_trial():
    steps = [
        step("look around", "Kitchen. A door to the north."),  # 0 new
        step("Look  Around", "Kitchen. A door to the north."),  # 1 same action+obs as 0 -> rep
        step("move north", "Hallway."),  # 2 new
        step("move south", "Kitchen. A door to the north."),  # 3 new action
        step("move north", "Hallway."),  # 4 same as 2 -> rep
        step("move north", "You can't go that way."),  # 5 same action, new obs -> not rep
        step("look around", "Kitchen. A door to the north.", trial=1),  # 6 new trial -> not rep
        step("look around", " Kitchen. A door to the north. ", trial=1),  # 7 stripped equal -> rep
    ]
    assert repeated_pair_flags(steps) == [False, True, False, False, True, False, False, True]
    # the paper's definition only looks one step back: 4 repeats step 2, not step 3
    assert repetitive_flags(steps) == [False, True, False, False, False, False, False, True]


def test_repetitive_flags_follow_rlvmr_same_action_as_previous_step_and_no_state_change():
    steps = [
        step("look around", "Kitchen."),  # 0 first step -> not rep
        step("look around", "Kitchen."),  # 1 same action, same obs, same score -> rep
        step("look around", "Kitchen."),  # 2 again -> rep
        step("take coin", "You take the coin.", score=0.5),  # 3 new action
        step("take coin", "You take the coin.", score=1.0),  # 4 same action+obs, score up -> no
        step("take coin", "You take the coin.", score=1.0),  # 5 same everything -> rep
        step("take coin", "You already have that.", score=1.0),  # 6 obs changed -> no
        step("open door", "Opened."),  # 7 new
        step("close door", "Closed."),  # 8 new
        step("open door", "Opened."),  # 9 a loop, but not the previous action -> no
        step("open door", "Opened.", trial=1),  # 10 first step of trial 1 -> no
        step(" Open  Door ", " Opened. ", trial=1),  # 11 normalised equal -> rep
    ]
    flags = repetitive_flags(steps)
    assert flags == [False, True, True, False, False, True, False, False, False, False, False, True]
    # the other measure counts the loop (9) and the repeated pairs (1, 2, 4, 5, 11)
    assert repeated_pair_flags(steps) == [
        False, True, True, False, True, True, False, False, False, True, False, True
    ]
    s = episode_stats(steps, env="e", won=False, score=0.0)
    assert (s.repetitive_steps, s.repeated_pair_steps) == (4, 6)
    m = aggregate([s], num_resamples=50)
    assert m.repetitive_rate.value == pytest.approx(4 / 12)
    assert m.repeated_pair_rate.value == pytest.approx(6 / 12)


def test_old_summaries_read_their_repetition_count_as_the_repeated_pair_count():
    old = {"env": "e", "status": "ok", "won": False, "score": 0.0, "steps": 3, "total_steps": 3,
           "invalid_steps": 0, "repetitive_steps": 2, "rejections": 0, "slow_thinking_calls": 0,
           "llm_calls": 0.0, "llm_tokens": 0.0, "wall_s": 0.0}
    log = [step("look", "room"), step("look", "room"), step("look", "room")]
    new = upgrade_stats(old, log)
    assert (new["repeated_pair_steps"], new["repetitive_steps"]) == (2, 2)
    assert EpisodeStats.from_dict(old).repeated_pair_steps == 2
    assert upgrade_stats(new) == new


# --- one episode -------------------------------------------------------------------------------


def test_episode_stats_counts_on_a_hand_made_log():
    steps = [
        step("look", "room", meta={"llm_calls": 2, "llm_tokens": 30}),
        step("look", "room", meta={"llm_calls": 1, "llm_tokens": {"prompt": 10, "completion": 5}}),
        step("eat key", "You can't.", invalid=True, meta={"rejected_proposals": ["a", "b"]}),
        step("open door", "Opened.", meta={"rejections": 3, "slow_thinking": True, "plan": {}}),
        step("go east", "Garden.", meta={"slow_thinking": False}),
    ]
    s = episode_stats(steps, env="twx:coin", won=True, score=1.0)
    assert s.steps == 5 and s.total_steps == 5
    assert s.invalid_steps == 1
    assert s.repetitive_steps == 1 and s.repeated_pair_steps == 1
    assert s.rejections == 2 + 3
    assert s.slow_thinking_calls == 1
    assert s.llm_calls == 3 and s.llm_tokens == 45
    assert s.wall_s == pytest.approx(5 * 0.75)
    assert s.won and s.score == 1.0 and s.status == "ok"


def test_episode_stats_with_trials_counts_final_trial_steps_but_all_invalid_steps():
    steps = [step("a", "x", invalid=True), step("b", "y"), step("c", "z", trial=1)]
    s = episode_stats(steps, env="e", won=True, score=1.0)
    assert s.steps == 1 and s.total_steps == 3 and s.invalid_steps == 1


def test_episode_stats_rejects_unknown_status():
    with pytest.raises(ValueError, match="unknown episode status 'crashed'; known: ok, error"):
        episode_stats([], env="e", won=False, score=0.0, status="crashed")


# --- aggregate ---------------------------------------------------------------------------------


def ep(
    won,
    score,
    steps,
    invalid=0,
    rep=0,
    pair=0,
    rej=0,
    slow=0,
    calls=0.0,
    tokens=0.0,
    wall=0.0,
    status="ok",
    env="twx:coin",
):
    return EpisodeStats(
        env=env,
        status=status,
        won=won,
        score=score,
        steps=steps,
        total_steps=steps,
        invalid_steps=invalid,
        repetitive_steps=rep,
        repeated_pair_steps=pair,
        rejections=rej,
        slow_thinking_calls=slow,
        llm_calls=calls,
        llm_tokens=tokens,
        wall_s=wall,
    )


def test_aggregate_equals_hand_computed_metrics():
    eps = [
        ep(True, 1.0, 4, invalid=0, rep=0, pair=1, rej=1, slow=0, calls=8, tokens=400, wall=2.0),
        ep(True, 1.0, 8, invalid=2, rep=1, pair=2, rej=3, slow=1, calls=16, tokens=800, wall=4.0),
        ep(False, 0.5, 10, invalid=1, rep=4, pair=5, rej=0, slow=2, calls=20, tokens=1000,
           wall=6.0),
        ep(False, 0.0, 10, invalid=0, rep=5, pair=6, rej=0, slow=0, calls=20, tokens=1000,
           wall=8.0),
        ep(False, 0.0, 3, invalid=3, status="error"),  # excluded everywhere
    ]
    m = aggregate(eps, seed=0)
    assert m.n == 4 and m.n_errors == 1 and m.total_steps == 32
    # SR = 2/4, Wilson(2, 4)
    assert m.success_rate.value == 0.5
    assert (m.success_rate.lo, m.success_rate.hi) == pytest.approx(wilson_interval(2, 4))
    # AR = (1 + 1 + .5 + 0)/4
    assert m.average_score.value == pytest.approx(0.625)
    # AvgS over successes only: (4 + 8)/2
    assert m.avg_steps_success.value == pytest.approx(6.0) and m.avg_steps_success.n == 2
    # hallucination: episodes with >= 1 invalid action = 2 of 4
    assert m.hallucination_rate.value == 0.5
    # per-step rates pooled over 32 steps
    assert m.invalid_rate.value == pytest.approx(3 / 32)
    assert m.repetitive_rate.value == pytest.approx(10 / 32)
    assert m.repeated_pair_rate.value == pytest.approx(14 / 32)
    assert m.rejections_per_episode.value == pytest.approx(1.0)
    assert m.slow_thinking_per_episode.value == pytest.approx(0.75)
    assert m.llm_calls_per_step.value == pytest.approx(64 / 32)
    assert m.llm_tokens_per_step.value == pytest.approx(3200 / 32)
    assert m.wall_s_per_step.value == pytest.approx(20 / 32)
    for est in (m.average_score, m.invalid_rate, m.repetitive_rate, m.wall_s_per_step):
        assert est.lo <= est.value <= est.hi


def test_aggregate_of_no_successes_leaves_avg_steps_undefined():
    m = aggregate([ep(False, 0.0, 5), ep(False, 0.2, 5)])
    assert m.success_rate.value == 0.0 and m.success_rate.hi > 0
    assert m.avg_steps_success.value is None and m.avg_steps_success.n == 0


def test_aggregate_of_only_errors_is_all_undefined():
    m = aggregate([ep(False, 0.0, 1, status="error")])
    assert m.n == 0 and m.n_errors == 1
    assert m.success_rate.value is None and m.invalid_rate.value is None


def test_group_metrics_splits_by_benchmark():
    eps = [ep(True, 1.0, 3), ep(False, 0.0, 5, env="scienceworld:boil"), ep(False, 0.0, 5)]
    groups = group_metrics(eps)
    assert list(groups) == ["twx:coin", "scienceworld:boil"]
    assert groups["twx:coin"].success_rate.value == 0.5
    assert groups["scienceworld:boil"].n == 1


def test_episode_stats_round_trip_through_dict():
    e = ep(True, 1.0, 3, calls=2.0)
    assert EpisodeStats.from_dict(e.to_dict()) == e
