"""Property: constrained choices and proposals always land in the admissible set."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.llm.roles import ActionProposal
from tests.tolerance import EPS64, log_softmax_tol, logsumexp_tol

WORDS = [
    "take",
    "take coin",
    "take coin from table",
    "go",
    "go north",
    "é",
    "ü✓",
    "open",
    "open door",
]
action = st.one_of(
    st.sampled_from(WORDS),
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
        min_size=1,
        max_size=12,
    ),
)
actions = st.lists(action, min_size=1, max_size=6, unique=True)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(acts=actions, seed=st.integers(0, 2**31 - 1))
def test_choice_output_is_always_admissible(tiny, acts, seed):
    out = tiny.generate(["choose", "choose again please"], acts, seed=seed)
    assert all(x in acts for x in out)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(actions, min_size=1, max_size=3), seed=st.integers(0, 2**31 - 1))
def test_action_proposal_is_admissible_with_normalised_log_probs(tiny, batch, seed):
    props = ActionProposal(tiny)(
        ["task"] * len(batch), [[]] * len(batch), ["obs"] * len(batch), batch, seed=seed
    )
    for p, acts in zip(props, batch, strict=True):
        assert p.action in acts
        # float64 log-softmax of the actions' scores, then its log-sum-exp
        lp = np.asarray(p.log_probs)
        n, m = len(acts), float(np.max(np.abs(lp[np.isfinite(lp)])))
        tol = log_softmax_tol(n, m, EPS64) + logsumexp_tol(n, m, EPS64)
        assert np.isclose(np.logaddexp.reduce(p.log_probs), 0.0, atol=tol)
        assert p.logq <= 1e-12
