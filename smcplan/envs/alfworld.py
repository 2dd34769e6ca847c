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
credit); the episode ends when it is won or after ``max_steps`` actions (default 50, the
limit ALFWorld's evaluations use).

Imports ``alfworld`` / ``textworld`` lazily (``MissingBenchmark`` with the install hint).
Must not import ``smcplan.llm``, ``smcplan.memory`` or higher layers.
"""

from __future__ import annotations

import operator
from typing import Any

from smcplan.envs.base import BaseTextEnv, EnvError, MissingBenchmark, StepResult, unknown_choice

#: The six ALFWorld task types, in the order of the ALFWorld paper.
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
_OPTIONS = ("cache_dir", "clone_by", "layout", "max_steps", "split")
#: How :meth:`AlfWorldEnv.clone` copies the game state.
CLONE_MODES: tuple[str, ...] = ("snapshot", "replay")

__all__ = ["TASK_TYPES", "AlfWorldEnv", "make"]


def _check_task_type(task_type: str) -> str:
    if task_type not in TASK_TYPES:
        raise unknown_choice("ALFWorld task type", task_type, [f"alfworld:{t}" for t in TASK_TYPES])
    return task_type


class AlfWorldEnv(BaseTextEnv):
    """One generated ALFWorld game behind the :class:`~smcplan.envs.base.TextEnv` protocol.

    Parameters
    ----------
    task_type:
        One of :data:`TASK_TYPES`.
    seed:
        The game ``reset()`` plays when called without a seed; ``reset(seed)`` plays the game
        of ``seed`` (floor plan, goal and object placement are functions of the seed).
    layout:
        Fix the ALFRED floor plan number (e.g. ``1`` for ``FloorPlan1``); ``None`` lets the
        seed choose among the floor plans that can host the task.
    split:
        ``"all"``, ``"train"`` (ALFRED's training scenes) or ``"test"`` (the held-out
        scenes FloorPlan 1-6, 201-206, 301-306, 401-406): where ``layout=None`` draws from.
    cache_dir:
        Folder for generated games (default: ``$SMCPLAN_CACHE/alfworld`` or
        ``~/.cache/smcplan/alfworld``).
    max_steps:
        Step limit per episode (ALFWorld's evaluations use 50).
    clone_by:
        How :meth:`clone` copies the state. ``"snapshot"`` (default): the clone shares this
        env's engine and checks its own state out of fast-downward's state registry before each
        step (:mod:`~smcplan.envs.alfworld_gen.engine`; no PDDL translation, no replay).
        ``"replay"``: a fresh engine replays the episode's actions (the reference the snapshot
        path is tested and benchmarked against; also the fallback when the engine's library
        lacks ``set_state_id``).
    """

    def __init__(
        self,
        task_type: str,
        seed: int = 0,
        *,
        layout: int | None = None,
        split: str = "all",
        cache_dir: str | None = None,
        max_steps: int = 50,
        clone_by: str = "snapshot",
    ) -> None:
        super().__init__(f"alfworld:{_check_task_type(task_type)}", max_steps)
        if clone_by not in CLONE_MODES:
            raise unknown_choice("clone_by", clone_by, list(CLONE_MODES))
        self.task_type = task_type
        self.layout = layout
        self.split = split
        self.cache_dir = cache_dir
        self.clone_by = clone_by
        self.default_seed = seed
        self._engine: Any = None  # a SharedEngine, shared with this env's snapshot clones
        self._token = object()  # this env's key in the shared engine
        self._state: Any = None
        self._game = self._generate(seed)  # validates seed, layout and split now
        self._task = str(self._game.task)

    # -- game selection -------------------------------------------------------------------

    def _generate(self, seed: int) -> Any:
        from smcplan.envs.alfworld_gen import UnsolvableGame, generate_game

        try:
            return generate_game(
                self.task_type,
                seed,
                layout=self.layout,
                split=self.split,
                cache_dir=self.cache_dir,
            )
        except UnsolvableGame as exc:
            raise EnvError(f"{self.name}: {exc}") from exc

    @property
    def game(self) -> Any:
        """The current :class:`~smcplan.envs.alfworld_gen.GameInfo` (files, floor plan, goal)."""
        return self._game

    # -- protocol -------------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start the game of ``seed`` (``default_seed`` if ``None``) from its initial state."""
        seed = self.default_seed if seed is None else seed
        if isinstance(seed, bool) or not hasattr(seed, "__index__"):
            raise ValueError(f"{self.name}: seed must be a non-negative int, got {seed!r}")
        seed = operator.index(seed)
        if seed != self._game.seed:
            self._game = self._generate(seed)
        self._state = self._engine_reset()
        return self._begin(
            str(self._state.feedback),
            task=str(self._game.task),
            admissible=self._state["admissible_commands"],
            seed=seed,
            extra=self._extra(),
        )

    def step(self, action: str) -> StepResult:
        """Apply ``action``. An action outside :meth:`admissible_actions` changes nothing; the
        engine answers "Nothing happens." and ``info["invalid"]`` is True."""
        self._require_running()
        from smcplan.envs.alfworld_gen.expert import preserved_globals

        command = str(action).strip()
        invalid = command not in self._admissible
        engine = self._engine
        try:
            with engine.lock, preserved_globals():
                engine.checkout(self._token)
                self._state, _, _ = engine.tw.step(command)
        except Exception as exc:
            raise EnvError(f"{self.name}: the engine failed on {command!r}: {exc}") from exc
        won = bool(self._state["won"])
        return self._finish(
            str(self._state.feedback),
            command,
            score=1.0 if won else 0.0,
            won=won,
            invalid=invalid,
            backend_done=won,
            admissible=self._state["admissible_commands"],
            extra=self._extra(),
        )

    def gold_actions(self) -> list[str]:
        """ALFWorld's hand-coded expert's winning actions from the reset state of the current
        game (the walkthrough stored in ``game.tw-pddl``)."""
        return list(self._game.walkthrough)

    def clone(self) -> AlfWorldEnv:
        """An independent copy in the same state.

        With ``clone_by="snapshot"`` the copy shares this env's engine and owns a snapshot of
        the current state (fast-downward's state id plus the engine's Python state); each env
        checks its own state out before stepping. With ``"replay"`` (or an engine without state
        ids) a fresh engine replays this episode's actions."""
        self._require_started()
        twin = AlfWorldEnv.__new__(AlfWorldEnv)
        twin.__dict__.update(self.__dict__)
        twin._token = object()
        twin._admissible, twin._actions = list(self._admissible), list(self._actions)
        engine = self._engine
        if self.clone_by == "snapshot" and engine is not None and engine.snapshots:
            with engine.lock:
                engine.fork(self._token, twin._token)
            return twin
        twin._engine = None
        twin._state = twin._engine_reset()
        from smcplan.envs.alfworld_gen.expert import preserved_globals

        try:
            with preserved_globals():
                for command in self._actions:
                    twin._state, _, _ = twin._engine.tw.step(command)
        except Exception as exc:
            twin.close()
            raise EnvError(f"{self.name}: replay for clone() failed: {exc}") from exc
        return twin

    def close(self) -> None:
        """Release the engine (the planning task of its fast-downward copy); idempotent."""
        self._release_engine()

    def _release_engine(self) -> None:
        """Leave the engine without closing the env (``reset`` loads a fresh one); the engine
        itself is closed when its last user leaves."""
        engine, self._engine, self._state = self._engine, None, None
        if engine is not None:
            with engine.lock:
                last = engine.release(self._token)
            if last:
                from smcplan.envs.alfworld_gen.expert import close_tw_env

                close_tw_env(engine.tw)

    # -- helpers --------------------------------------------------------------------------

    def _engine_reset(self) -> Any:
        """Reset this env's engine to the game's initial state; load a private engine first if
        there is none, it holds another game, or clones share it (their states must survive)."""
        from smcplan.envs.alfworld_gen.engine import SharedEngine
        from smcplan.envs.alfworld_gen.expert import make_tw_env, preserved_globals

        game_file = str(self._game.game_file)
        try:
            with preserved_globals():
                engine = self._engine
                if engine is None or engine.game_file != game_file or engine.users > 1:
                    self._release_engine()
                    tw = make_tw_env(expert=False)
                    tw.load(game_file)
                    self._engine = SharedEngine(tw, game_file, self._token)
                with self._engine.lock:
                    self._engine.claim(self._token)
                    return self._engine.tw.reset()
        except MissingBenchmark:
            raise
        except Exception as exc:
            self._release_engine()
            raise EnvError(f"{self.name}: could not start {game_file}: {exc}") from exc

    def _extra(self) -> dict[str, Any]:
        return {
            "task": str(self._game.task),
            "task_type": self.task_type,
            "floor_plan": int(self._game.floor_plan),
            "gamefile": str(self._game.game_file),
        }


def make(task_type: str, seed: int = 0, **kwargs: Any) -> AlfWorldEnv:
    """``AlfWorldEnv(task_type, seed, **kwargs)``; the registry maps ``"alfworld:<task_type>"``
    here. Keyword arguments: ``layout``, ``split``, ``cache_dir``, ``max_steps``."""
    _check_task_type(task_type)
    unknown = sorted(set(kwargs) - set(_OPTIONS))
    if unknown:
        raise TypeError(
            f"unknown ALFWorld option(s) {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(_OPTIONS)}"
        )
    return AlfWorldEnv(task_type, seed, **kwargs)
