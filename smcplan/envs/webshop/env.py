"""The WebShop environment (Yao et al., 2022) as a ``TextEnv``, without a web server.

One episode = one goal of the catalog (``reset(seed)`` takes the goal index).  The agent
starts on the search page and acts with the original action space:

* ``search[<keywords>]`` on the search page: BM25 top 50, shown 10 per results page;
* ``click[<element>]`` on any clickable element of the current page (case-insensitive):
  ``back to search``, ``next >``, ``< prev``, a product's ASIN, an option value,
  ``description`` / ``features`` / ``reviews`` (/ ``attributes``), ``buy now``.

``click[buy now]`` ends the episode with the purchase reward of ``reward.get_reward`` (in
[0, 1]); ``won`` means reward 1.  An action that does not parse, a click on something not on
the page, or a search away from the search page changes nothing and is reported ``invalid``
(the original likewise ignores them; it runs a search from any page, which here counts as
invalid because those pages have no search bar).

``admissible_actions()``: every click on the page; on the search page, one search whose query
is the instruction itself (the WebShop paper's rule baseline; any other ``search[...]`` is
accepted too).  ``gold_actions()``: search the instruction, page to the target product, click
it, click each goal option, buy.  ``clone()`` copies the session (pure Python).

Pure standard library; must not import other smcplan layers except ``smcplan.envs.base``.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from typing import Any

from smcplan.envs.base import BaseTextEnv, EnvError, unknown_choice
from smcplan.envs.webshop import pages
from smcplan.envs.webshop.catalog import Catalog, load_catalog, original_catalog, synthetic_catalog
from smcplan.envs.webshop.reward import get_reward

__all__ = ["WebShopEnv", "parse_action", "instruction_query"]

_ACTION = re.compile(r"(.+)\[(.+)\]")
_PRICE_CLAUSE = re.compile(r",? and price lower than [\d.]+ dollars$")
DATA_ENV_VAR = "SMCPLAN_WEBSHOP_DATA"


def parse_action(action: str) -> tuple[str, str | None]:
    """``"click[Buy Now]"`` -> ``("click", "Buy Now")`` (``web_agent_site`` ``parse_action``)."""
    m = _ACTION.match(action.strip())
    if m is None:
        return action.strip(), None
    return m.group(1).strip(), m.group(2)


def instruction_query(instruction: str) -> str:
    """The instruction without its price clause: the search query of the baseline."""
    return _PRICE_CLAUSE.sub("", instruction.strip()).strip()


@dataclass
class _Session:
    page: str = "search"  # search | results | item | sub | done
    keywords: str | None = None
    results: list[str] = field(default_factory=list)
    page_no: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub: str | None = None
    clicked: str | None = None
    reward: float = 0.0
    reward_info: dict[str, Any] = field(default_factory=dict)


class WebShopEnv(BaseTextEnv):
    """WebShop on a catalog: the synthetic one by default, or the real files.

    Args:
        catalog: a loaded ``Catalog``; else ``data_dir`` (a folder with the original
            ``items_shuffle_1000.json``, ``items_ins_v2_1000.json``, ``items_human_ins.json``;
            also read from ``$SMCPLAN_WEBSHOP_DATA``) or explicit ``products_path`` /
            ``attributes_path`` / ``human_instructions_path``; else the synthetic catalog.
        human_goals: goals from the human instructions (evaluation setting) or synthetic ones.
        split: restrict goal indices to ``test``/``dev``/``train`` of the catalog's splits.
        seed: goal index ``reset()`` uses without one (default: the first of the split).
        max_steps: step limit (15, as in ReAct and Reflexion on WebShop).
        show_attrs: show the ``[Attributes]`` button on item pages (off, as in evaluation).
    """

    def __init__(
        self,
        catalog: Catalog | None = None,
        *,
        data_dir: str | None = None,
        products_path: str | None = None,
        attributes_path: str | None = None,
        human_instructions_path: str | None = None,
        human_goals: bool = True,
        split: str | None = None,
        seed: int | None = None,
        max_steps: int = 15,
        show_attrs: bool = False,
    ) -> None:
        super().__init__("webshop", max_steps)
        if catalog is None:
            data_dir = data_dir or os.environ.get(DATA_ENV_VAR) or None
            if products_path is not None:
                if attributes_path is None:
                    raise ValueError("products_path needs attributes_path (items_ins_v2*.json)")
                catalog = load_catalog(
                    products_path, attributes_path, human_instructions_path,
                    human_goals=human_goals,
                )
            elif data_dir is not None:
                catalog = original_catalog(str(data_dir), human_goals)
            else:
                catalog = synthetic_catalog()
        if split is not None and split not in catalog.splits:
            raise unknown_choice("WebShop split", split, catalog.splits)
        self.catalog = catalog
        self.split = split
        self.show_attrs = show_attrs
        if seed is None:
            seed = catalog.splits[split].start if split is not None else 0
        self.default_seed = seed
        self._goal: dict[str, Any] = {}
        self._session = _Session()
        self._clickables: list[str] = []
        self._observation = ""
        self._gold: list[str] | None = None

    # -- protocol -------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        index = self.default_seed if seed is None else int(seed)
        n = len(self.catalog.goals)
        if not 0 <= index < n:
            spans = ", ".join(f"{k} {r.start}-{r.stop - 1}" for k, r in self.catalog.splits.items()
                              if len(r))
            raise ValueError(f"webshop: unknown goal {index}; valid: 0-{n - 1} ({spans})")
        if self.split is not None and index not in self.catalog.splits[self.split]:
            r = self.catalog.splits[self.split]
            raise ValueError(
                f"webshop: goal {index} is not in split {self.split!r} (goals {r.start}-"
                f"{r.stop - 1})"
            )
        self._goal = self.catalog.goals[index]
        self._session = _Session()
        self._gold = None
        observation = self._render()
        return self._begin(
            observation,
            task=self._goal["instruction_text"],
            admissible=self._admissible_now(),
            seed=index,
            extra=self._extra(),
        )

    def step(self, action: str):
        self._require_running()
        invalid = not self._apply(action)
        observation = self._render()
        s = self._session
        return self._finish(
            observation,
            action,
            score=s.reward,
            won=s.page == "done" and s.reward >= 1.0 - 1e-9,
            invalid=invalid,
            backend_done=s.page == "done",
            admissible=self._admissible_now(),
            extra=self._extra(),
        )

    def gold_actions(self) -> list[str] | None:
        """Search the instruction, page to the target, click it and the goal options, buy."""
        self._require_started()
        if self._gold is None:
            self._gold = self._plan_gold()
        return list(self._gold) if self._gold is not None else None

    def clone(self) -> WebShopEnv:
        twin = copy.copy(self)
        twin._session = copy.deepcopy(self._session)
        twin._admissible = list(self._admissible)
        twin._actions = list(self._actions)
        twin._clickables = list(self._clickables)
        return twin

    @property
    def goal(self) -> dict[str, Any]:
        """The current goal (target ASIN, attributes, options, price bound): for analysis only."""
        return dict(self._goal)

    # -- mechanics ------------------------------------------------------------------------
    def _apply(self, action: str) -> bool:
        """Carry out ``action``; ``False`` when it is not valid on the current page."""
        name, arg = parse_action(action)
        s = self._session
        if arg is None:
            return False
        name = name.lower()
        if name == "search":
            query = arg.strip()
            if s.page != "search" or not query:
                return False
            self._search(query.lower(), page_no=1)
            return True
        if name != "click":
            return False
        target = arg.strip().lower()
        if target not in self._clickables or target == "search":
            return False
        s.clicked = None
        if target == pages.BACK_TO_SEARCH.lower():
            self._session = _Session()
        elif target == pages.NEXT_PAGE.lower() and s.page == "results":
            self._search(s.keywords, s.page_no + 1)
        elif target == pages.PREV_PAGE.lower() and s.page == "results":
            self._search(s.keywords, s.page_no - 1)
        elif target == pages.PREV_PAGE.lower() and s.page == "sub":
            s.page, s.sub = "item", None
        elif target == pages.PREV_PAGE.lower() and s.page == "item":
            self._search(s.keywords, s.page_no)
        elif target == pages.END_BUTTON.lower():
            self._buy()
        elif target in (b.lower() for b in pages.SUB_PAGES):
            s.page, s.sub = "sub", next(b for b in pages.SUB_PAGES if b.lower() == target)
        elif s.page == "results":
            s.asin, s.page = target.upper(), "item"
        else:  # an option value on the item page
            product = self.catalog.by_asin[s.asin]
            groups = [n for n, values in product["options"].items() if target in values]
            if not groups:
                return False
            s.options[groups[-1]] = target  # as the original: the last group with that value
            s.clicked = target
        return True

    def _search(self, keywords: str, page_no: int) -> None:
        s = self._session
        if s.keywords != keywords or not s.results:
            s.results = self.catalog.search(keywords)
        s.keywords, s.page_no, s.page = keywords, page_no, "results"
        s.asin, s.options, s.sub = None, {}, None

    def _buy(self) -> None:
        s = self._session
        product = self.catalog.by_asin[s.asin]
        reward, info = get_reward(product, self._goal, self.catalog.prices[s.asin], s.options)
        s.reward, s.reward_info, s.page = float(reward), info, "done"

    def _render(self) -> str:
        s = self._session
        if s.page == "search":
            self._clickables = []
            return pages.search_page(self._goal["instruction_text"])
        if s.page == "results":
            start = (s.page_no - 1) * pages.PRODUCT_WINDOW
            shown = [self.catalog.by_asin[a] for a in s.results[start:start + pages.PRODUCT_WINDOW]]
            text, self._clickables = pages.results_page(shown, s.page_no, len(s.results))
            return text
        product = self.catalog.by_asin[s.asin]
        if s.page == "item":
            text, self._clickables = pages.item_page(product, s.options, self.show_attrs,
                                                     s.clicked)
            return text
        if s.page == "sub":
            text, self._clickables = pages.sub_page(product, s.sub)
            return text
        self._clickables = []
        return pages.done_page(s.asin, s.options, s.reward)

    def _admissible_now(self) -> list[str]:
        if self._session.page == "search":
            return [f"search[{instruction_query(self._goal['instruction_text'])}]"]
        return [f"click[{c}]" for c in self._clickables]

    def _extra(self) -> dict[str, Any]:
        s = self._session
        extra: dict[str, Any] = {"page": s.page, "asin": s.asin, "options": dict(s.options)}
        if s.page == "done":
            extra["reward_info"] = dict(s.reward_info)
        return extra

    def _plan_gold(self) -> list[str] | None:
        """Simulate the gold path on a copy of the reset state; ``None`` if search misses."""
        query = instruction_query(self._goal["instruction_text"])
        results = self.catalog.search(query.lower())
        target = self._goal["asin"]
        if target not in results:
            return None
        actions = [f"search[{query}]"]
        actions += ["click[next >]"] * (results.index(target) // pages.PRODUCT_WINDOW)
        actions.append(f"click[{target.lower()}]")
        product = self.catalog.by_asin[target]
        goal_options = self._goal["goal_options"]
        wanted = list(goal_options.values()) if isinstance(goal_options, dict) else goal_options
        for values in product["options"].values():
            for value in wanted:
                if value.lower() in values:
                    actions.append(f"click[{value.lower()}]")
                    break
        actions.append("click[buy now]")
        return actions

    def check_gold(self) -> float:
        """Play the gold path on a clone and return its reward (for tests and the generator)."""
        twin = self.clone()
        twin._session, twin._done, twin._steps, twin._actions = _Session(), False, 0, []
        twin._render()
        twin.max_steps = 10**6
        result = None
        for action in self.gold_actions() or []:
            result = twin.step(action)
        if result is None:
            raise EnvError("webshop: no gold path for this goal")
        return float(result.info["score"])
