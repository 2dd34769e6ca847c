"""ALFWorld adapter: games generated offline, played with ALFWorld's TextWorld engine.

ALFWorld (Shridhar et al., 2021, ICLR) renders ALFRED household tasks as text games: a PDDL
domain (``alfred.pddl``) grounded by fast-downward, a grammar (``alfred.twl2``) that turns
states into text, and ALFRED scenes. The ``alfworld`` 0.4.2 package ships the domain, the
grammar and 120 floor plans but no games (they must be downloaded from GitHub, which is not
reachable here), so :mod:`smcplan.envs.alfworld_gen` synthesises games deterministically from
(task type, floor plan, seed) and caches them under ``~/.cache/smcplan/alfworld``
(``$SMCPLAN_CACHE/alfworld``). Play goes through TextWorld's ``PddlEnv`` with ALFWorld's
``AlfredDemangler`` and ``AlfredInfos`` wrappers, as ALFWorld's own ``AlfredTWEnv`` does;
the gold path is the walkthrough of ALFWorld's hand-coded expert (``AlfredExpert``).

These are ALFWorld-engine games, NOT the official ALFWorld evaluation set (json_2.1.1
valid_seen / valid_unseen): report results on them as such.

Task types (``TASK_TYPES``, with ALFWorld's names): ``pick_and_place``
(``pick_and_place_simple``), ``pick_clean_then_place`` (``..._in_recep``),
``pick_heat_then_place``, ``pick_cool_then_place``, ``look_at_obj_in_light``,
``pick_two_obj_and_place``. Score is 1 when the goal holds, else 0 (ALFWorld has no partial
credit); the episode is done when it is won. ALFWorld evaluations usually cap episodes at 50
steps: the caller enforces that.

Imports ``alfworld`` / ``textworld`` lazily (``MissingBenchmark`` with the install hint).
Must not import ``smcplan.llm``, ``smcplan.memory`` or higher layers.
"""

from __future__ import annotations

from typing import Any

from smcplan.envs.base import EnvError, MissingBenchmark, StepResult

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)

__all__ = ["TASK_TYPES", "AlfWorldEnv", "make"]


def _check_task_type(task_type: str) -> str:
    if task_type not in TASK_TYPES:
        raise ValueError(
            f"unknown ALFWorld task type {task_type!r}; known: "
            + ", ".join(f"alfworld:{t}" for t in TASK_TYPES)
        )
    return task_type


class AlfWorldEnv:
    """One generated ALFWorld game behind the :class:`~smcplan.envs.base.TextEnv` protocol.

    Parameters
    ----------
    task_type:
        One of :data:`TASK_TYPES`.
    seed:
        Selects the game (floor plan, goal, object placement); ``reset(seed)`` switches game.
    layout:
        Fix the ALFRED floor plan number (e.g. ``1`` for ``FloorPlan1``); ``None`` lets the
        seed choose among the floor plans that can host the task.
    split:
        ``"all"``, ``"train"`` (ALFRED's training scenes) or ``"test"`` (the held-out
        scenes FloorPlan 1-6, 201-206, 301-306, 401-406): where ``layout=None`` draws from.
    cache_dir:
        Folder for generated games (default: ``$SMCPLAN_CACHE/alfworld`` or
        ``~/.cache/smcplan/alfworld``).
    """

    def __init__(
        self,
        task_type: str,
        seed: int = 0,
        *,
        layout: int | None = None,
        split: str = "all",
        cache_dir: str | None = None,
    ) -> None:
        self.task_type = _check_task_type(task_type)
        self.name = f"alfworld:{task_type}"
        self._layout = layout
        self._split = split
        self._cache_dir = cache_dir
        self._tw: Any = None
        self._state: Any = None
        self._history: list[str] = []
        self._score = 0.0
        self._game = self._generate(seed)
        self._loaded_file: str | None = None

    # -- game selection -----------------------------------------------------------------

    def _generate(self, seed: int) -> Any:
        from smcplan.envs.alfworld_gen import UnsolvableGame, generate_game

        try:
            return generate_game(
                self.task_type,
                seed,
                layout=self._layout,
                split=self._split,
                cache_dir=self._cache_dir,
            )
        except UnsolvableGame as exc:
            raise EnvError(str(exc)) from exc

    @property
    def seed(self) -> int:
        return int(self._game.seed)

    @property
    def game(self) -> Any:
        """The :class:`~smcplan.envs.alfworld_gen.GameInfo` (files, floor plan, goal)."""
        return self._game

    @property
    def task(self) -> str:
        """The goal sentence, e.g. ``"put a clean mug in coffeemachine"``."""
        return str(self._game.task)

    # -- protocol -------------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start the game of ``seed`` (the current one if ``None``) from its initial state."""
        from smcplan.envs.alfworld_gen.expert import make_tw_env, preserved_globals

        if seed is not None and seed != self.seed:
            self._game = self._generate(seed)
        game_file = str(self._game.game_file)
        try:
            with preserved_globals():
                if self._tw is None or self._loaded_file != game_file:
                    self._close_tw()
                    self._tw = make_tw_env(expert=False)
                    self._tw.load(game_file)
                    self._loaded_file = game_file
                self._state = self._tw.reset()
        except MissingBenchmark:
            raise
        except Exception as exc:
            self._close_tw()
            raise EnvError(f"{self.name}: could not start game {game_file}: {exc}") from exc
        self._history = []
        self._score = 0.0
        return str(self._state.feedback), self._info(invalid=False)

    def step(self, action: str) -> StepResult:
        """Apply ``action``; an action outside :meth:`admissible_actions` changes nothing and
        is reported with ``info["invalid"] = True`` (the engine answers "Nothing happens.")."""
        if self._state is None:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        from smcplan.envs.alfworld_gen.expert import preserved_globals

        command = str(action).strip()
        invalid = command not in set(self._state["admissible_commands"])
        try:
            with preserved_globals():
                self._state, _, _ = self._tw.step(command)
        except Exception as exc:
            raise EnvError(f"{self.name}: engine failed on {command!r}: {exc}") from exc
        self._history.append(command)
        info = self._info(invalid=invalid)
        reward = info["score"] - self._score
        self._score = info["score"]
        return StepResult(str(self._state.feedback), reward, bool(info["won"]), info)

    def admissible_actions(self) -> list[str]:
        if self._state is None:
            raise RuntimeError(f"{self.name}: call reset() before admissible_actions()")
        return list(self._state["admissible_commands"])

    def gold_actions(self) -> list[str]:
        """ALFWorld's hand-coded expert's winning actions from the reset state."""
        return list(self._game.walkthrough)

    def clone(self) -> AlfWorldEnv:
        """An independent copy in the same state: a fresh engine replaying this history
        (fast-downward keeps its state in a private C library, with no state copy)."""
        twin = AlfWorldEnv.__new__(AlfWorldEnv)
        twin.__dict__.update(self.__dict__)
        twin._tw, twin._state, twin._loaded_file, twin._history = None, None, None, []
        if self._state is None:
            return twin
        twin.reset()
        for command in self._history:
            twin.step(command)
        twin._score = self._score
        return twin

    def close(self) -> None:
        """Release the engine (its private copy of fast-downward's library); idempotent."""
        self._close_tw()
        self._state = None

    def _close_tw(self) -> None:
        if self._tw is not None:
            from smcplan.envs.alfworld_gen.expert import close_tw_env

            tw, self._tw, self._loaded_file = self._tw, None, None
            close_tw_env(tw)

    def __enter__(self) -> AlfWorldEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------

    def _info(self, invalid: bool) -> dict[str, Any]:
        won = bool(self._state["won"])
        return {
            "score": 1.0 if won else 0.0,
            "won": won,
            "invalid": invalid,
            "admissible_actions": list(self._state["admissible_commands"]),
            "task": self.task,
            "moves": len(self._history),
            "gamefile": str(self._game.game_file),
            "floor_plan": int(self._game.floor_plan),
        }


def make(task_type: str, seed: int = 0, **kwargs: Any) -> AlfWorldEnv:
    """``AlfWorldEnv(task_type, seed, **kwargs)``; the registry maps ``"alfworld:<task_type>"``
    here. Keyword arguments: ``layout``, ``split``, ``cache_dir`` (see :class:`AlfWorldEnv`)."""
    _check_task_type(task_type)
    unknown = set(kwargs) - {"layout", "split", "cache_dir"}
    if unknown:
        raise TypeError(
            f"unknown ALFWorld option(s) {', '.join(sorted(unknown))}; known: cache_dir, layout, split"
        )
    return AlfWorldEnv(task_type, seed, **kwargs)
