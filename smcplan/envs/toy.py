"""Text view of a discrete POMDP (``toy:household``, ``toy:tiger``): the toy domains as ``TextEnv``.

A ``DiscretePOMDP`` (``smcplan.pomdp``) is run as an episode with its own dynamics:

    s_0 ~ b_0,   s_{t+1} ~ T[a_t, s_t, .],   o_{t+1} ~ O[a_t, s_{t+1}, .],   r_t = R[s_t, a_t],

all drawn from ``numpy.random.default_rng(seed)``, so ``reset(seed)`` fixes the whole episode
given the actions.  The observation text is the observation's name; the admissible actions are
the action names (every action is allowed in a POMDP; a string that names none is ``invalid``
and changes nothing).  The POMDP's reward is kept in ``info["pomdp_reward"]`` (and the
discounted return in ``info["return"]``); the ``TextEnv`` score is 1 for success, else 0:

* ``household``: success = entering ``task succeeded``, failure = ``task failed``;
* ``tiger``: opening a door ends the episode: success when it hides the treasure (R > 0).

``gold_actions()`` is a privileged expert (it sees the hidden state, like ALFWorld's expert):
the shortest action sequence that succeeds from the true initial state, by breadth-first
search over the transitions' most likely next states.  ``env.pomdp`` exposes the exact model
(for planners checked against ``smcplan.pomdp.solve_exact``); the hidden state is never put in
``info`` (agents read ``info``), only in ``env.state_name`` for tests and analysis.

Imports ``smcplan.pomdp`` (lazily, through the domain constructors) and numpy; nothing from
``smcplan.llm``, ``memory``, ``planning`` or higher.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from smcplan.envs.base import BaseTextEnv, unknown_choice

__all__ = ["ToyPOMDPEnv", "ToySpec", "TOY_SPECS", "make_toy"]

_NOTHING = "nothing happens."


@dataclass(frozen=True)
class ToySpec:
    """How a POMDP domain reads as a text task: its builder, task text, intro and outcome."""

    build: Callable[..., Any]
    task: Callable[[Any], str]
    intro: Callable[[Any], str]
    #: (pomdp, s, a, s_next, reward) -> "won" / "lost" / None (episode goes on)
    outcome: Callable[[Any, int, int, int, float], str | None]
    max_steps: int = 30


def _household_build(**kwargs: Any) -> Any:
    from smcplan.pomdp.domains import household

    return household(**kwargs)


def _household_receptacles(pomdp: Any) -> list[str]:
    return [a[len("go to "):] for a in pomdp.action_names if a.startswith("go to ")]


def _household_object(pomdp: Any) -> str:
    take = next(a for a in pomdp.action_names if a.startswith("take "))
    return take[len("take "):].split(" from ")[0]


def _household_outcome(pomdp: Any, s: int, a: int, s_next: int, reward: float) -> str | None:
    name = pomdp.state_names[s_next]
    return {"task succeeded": "won", "task failed": "lost"}.get(name)


def _tiger_build(**kwargs: Any) -> Any:
    from smcplan.pomdp.domains import tiger

    return tiger(**kwargs)


def _tiger_outcome(pomdp: Any, s: int, a: int, s_next: int, reward: float) -> str | None:
    if pomdp.action_names[a].startswith("open"):
        return "won" if reward > 0 else "lost"
    return None


TOY_SPECS: dict[str, ToySpec] = {
    "household": ToySpec(
        build=_household_build,
        task=lambda p: f"Your task is to: take the {_household_object(p)}.",
        intro=lambda p: "You are in the middle of a room. Looking quickly around you, you see "
        + ", ".join(f"a {r}" for r in _household_receptacles(p)) + ".",
        outcome=_household_outcome,
        max_steps=30,
    ),
    "tiger": ToySpec(
        build=_tiger_build,
        task=lambda p: "A tiger hides behind one of two doors and a treasure behind the other. "
        "Your task is to open the door with the treasure.",
        intro=lambda p: "You stand in front of a left door and a right door.",
        outcome=_tiger_outcome,
        max_steps=20,
    ),
}


class ToyPOMDPEnv(BaseTextEnv):
    """A discrete POMDP as a text environment (module docstring)."""

    def __init__(
        self,
        domain: str,
        pomdp: Any = None,
        *,
        seed: int | None = None,
        max_steps: int | None = None,
        **domain_kwargs: Any,
    ) -> None:
        if domain not in TOY_SPECS:
            raise unknown_choice("toy domain", domain, TOY_SPECS)
        spec = TOY_SPECS[domain]
        super().__init__(f"toy:{domain}", max_steps or spec.max_steps)
        if pomdp is not None and domain_kwargs:
            raise ValueError("give either a pomdp or domain keyword arguments, not both")
        self.spec = spec
        self.domain = domain
        self.pomdp = pomdp if pomdp is not None else spec.build(**domain_kwargs)
        self.default_seed = 0 if seed is None else int(seed)
        self._T = np.asarray(self.pomdp.T, dtype=np.float64)
        self._O = np.asarray(self.pomdp.O, dtype=np.float64)
        self._R = np.asarray(self.pomdp.R, dtype=np.float64)
        self._b0 = np.asarray(self.pomdp.b0, dtype=np.float64)
        self._actions_list = list(self.pomdp.action_names)
        self._action_ids = {n: i for i, n in enumerate(self._actions_list)}
        self._rng = np.random.default_rng(self.default_seed)
        self._state = 0
        self._start_state = 0
        self._return = 0.0

    # -- protocol -------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        seed = self.default_seed if seed is None else int(seed)
        if seed < 0:
            raise ValueError(f"{self.name}: seed must be a non-negative int, got {seed}")
        self._rng = np.random.default_rng(seed)
        self._state = self._start_state = self._draw(self._b0)
        self._return = 0.0
        return self._begin(
            self.spec.intro(self.pomdp),
            task=self.spec.task(self.pomdp),
            admissible=self._actions_list,
            seed=seed,
            extra={"pomdp_reward": 0.0, "return": 0.0},
        )

    def step(self, action: str):
        self._require_running()
        a = self._action_ids.get(action.strip()) if isinstance(action, str) else None
        if a is None:
            return self._finish(_NOTHING, action, score=self._score, won=False, invalid=True,
                                backend_done=False, admissible=self._actions_list,
                                extra={"pomdp_reward": 0.0, "return": self._return})
        s = self._state
        reward = float(self._R[s, a])
        s_next = self._draw(self._T[a, s])
        o = self._draw(self._O[a, s_next])
        self._return += self.pomdp.discount ** self._steps * reward
        self._state = s_next
        outcome = self.spec.outcome(self.pomdp, s, a, s_next, reward)
        observation = self.pomdp.observation_names[o]
        if self.domain == "tiger" and outcome is not None:
            observation = ("you open it and find the treasure." if outcome == "won"
                           else "you open it and the tiger leaps out.")
        return self._finish(
            observation,
            action,
            score=1.0 if outcome == "won" else 0.0,
            won=outcome == "won",
            invalid=False,
            backend_done=outcome is not None or bool(self.pomdp.terminal[s_next]),
            admissible=self._actions_list,
            extra={"pomdp_reward": reward, "return": self._return},
        )

    def gold_actions(self) -> list[str] | None:
        """Shortest successful action sequence from the true initial state (privileged)."""
        self._require_started()
        start = self._start_state
        seen = {start}
        queue: deque[tuple[int, list[int]]] = deque([(start, [])])
        while queue:
            s, path = queue.popleft()
            for a in range(len(self._actions_list)):
                s_next = int(np.argmax(self._T[a, s]))
                outcome = self.spec.outcome(self.pomdp, s, a, s_next, float(self._R[s, a]))
                if outcome == "won":
                    return [self._actions_list[i] for i in path + [a]]
                if outcome is None and s_next not in seen and not self.pomdp.terminal[s_next]:
                    seen.add(s_next)
                    queue.append((s_next, path + [a]))
        return None

    def clone(self) -> ToyPOMDPEnv:
        """An independent copy: same hidden state and the same random stream from here on."""
        twin = copy.copy(self)
        twin._rng = copy.deepcopy(self._rng)
        twin._admissible = list(self._admissible)
        twin._actions = list(self._actions)
        return twin

    @property
    def state_name(self) -> str:
        """The hidden state's name (for tests and analysis; agents must not read it)."""
        return self.pomdp.state_names[self._state]

    def _draw(self, probs: np.ndarray) -> int:
        return int(self._rng.choice(len(probs), p=probs / probs.sum()))


def make_toy(domain: str, **kwargs: Any) -> ToyPOMDPEnv:
    """``make("toy:<domain>", ...)``: ``pomdp=`` a ready model, or the domain's own kwargs."""
    return ToyPOMDPEnv(domain, **kwargs)
