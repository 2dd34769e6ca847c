"""WebShop's home: pages, not rooms, so no place map rule and no reply correction; a step failed
where the env says so (``info["invalid"]``: a click on nothing, a search off the search page).
The rule-based triplets detect no WebShop page, so it reads with ``env_kind="auto"``.

Imports :mod:`smcplan.games.base` only.
"""

from __future__ import annotations

from smcplan.games.base import NullRules

__all__ = ["WebShopRules", "FAILURE_REPLIES"]

FAILURE_REPLIES: tuple[str, ...] = ()


class WebShopRules(NullRules):
    """WebShop's :class:`~smcplan.games.base.GameRules` (module docstring)."""

    family = "webshop"
