"""Garbage for the text planner's settings (:class:`smcplan.planning.PlannerConfig`): any value of
a rollout setting gives a valid configuration or a typed error naming the setting."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.planning import PlannerConfig

from ._garbage import bad_scalar, call


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["rollouts", "rollout_steps", "rollout_discount"]),
    bad_scalar,
)
def test_any_rollout_setting_is_valid_or_a_typed_error(field, value):
    ok, out = call(
        PlannerConfig.from_options, world_model="simulator", progress="env", **{field: value}
    )
    if ok:
        assert isinstance(out.rollouts, int) and out.rollouts >= 0
        assert isinstance(out.rollout_steps, int) and out.rollout_steps >= 1
        assert 0.0 < float(out.rollout_discount) <= 1.0
    else:
        assert field in str(out)


@settings(max_examples=60, deadline=None)
@given(bad_scalar)
def test_any_observation_temperature_is_valid_or_a_typed_error(value):
    ok, out = call(PlannerConfig.from_options, observation_temperature=value)
    if ok:
        t = float(out.observation_temperature)
        assert 0.0 <= t < float("inf") and not isinstance(out.observation_temperature, bool)
    else:
        assert "observation_temperature" in str(out)


@settings(max_examples=60, deadline=None)
@given(bad_scalar, st.sampled_from(["uniform", "lm"]))
def test_any_particles_per_action_is_valid_or_a_typed_error(value, proposal):
    ok, out = call(PlannerConfig.from_options, particles_per_action=value, proposal=proposal)
    if ok:
        k = out.particles_per_action
        assert isinstance(k, int) and not isinstance(k, bool) and k >= 0
        assert k == 0 or out.proposal == "uniform"
    else:
        assert "particles_per_action" in str(out)
