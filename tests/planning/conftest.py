"""Fixtures shared by the planning tests."""

from __future__ import annotations

import pytest

from tests.planning.household import drawer_household


@pytest.fixture(scope="module")
def drawer():
    """:func:`tests.planning.household.drawer_household`, one env per test module."""
    env, obs, actions = drawer_household()
    yield env, obs, actions
    env.close()
