"""Shared fixtures for the POMDP tests: compiled domains (compiled once per session) and random
POMDPs."""

from __future__ import annotations

import numpy as np
import pytest

from smcplan.pomdp import DiscretePOMDP, SparseTransition, domains


def random_pomdp(
    rng: np.random.Generator,
    n_states: int,
    n_actions: int,
    n_obs: int,
    *,
    sparse_k: int | None = None,
    alpha: float = 1.0,
) -> DiscretePOMDP:
    """Rows of T and O drawn from Dirichlet(alpha); with ``sparse_k`` each T row has K random
    successors."""
    if sparse_k is None:
        T = rng.dirichlet(np.full(n_states, alpha), size=(n_actions, n_states))
    else:
        nxt = rng.integers(0, n_states, size=(n_actions, n_states, sparse_k))
        prob = rng.dirichlet(np.full(sparse_k, alpha), size=(n_actions, n_states))
        T = SparseTransition(nxt, prob)
    O = rng.dirichlet(np.full(n_obs, alpha), size=(n_actions, n_states))  # noqa: E741
    R = rng.normal(size=(n_states, n_actions))
    b0 = rng.dirichlet(np.ones(n_states))
    return DiscretePOMDP(T, O, R, b0, 0.9, name=f"random({n_states},{n_actions},{n_obs})")


@pytest.fixture(scope="session")
def tiger() -> DiscretePOMDP:
    return domains.tiger()


@pytest.fixture(scope="session")
def check_first() -> DiscretePOMDP:
    return domains.household_check_first()


@pytest.fixture(scope="session")
def household() -> DiscretePOMDP:
    return domains.household()


@pytest.fixture(scope="session")
def rocksample44() -> DiscretePOMDP:
    return domains.rocksample(4, 4)
