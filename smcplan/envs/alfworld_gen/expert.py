"""Playing a generated game with ALFWorld's own engine and hand-coded expert.

The game is loaded the way ALFWorld's ``alfworld-generate`` script checks solvability:
TextWorld's ``PddlEnv`` (fast-downward grounds the ``alfred`` domain) wrapped by
``AlfredDemangler`` (THOR ids -> "apple 1"), ``AlfredInfos`` and ``AlfredExpert`` with the
hand-coded expert (``HandCodedTWAgent``), which explores receptacles with ALFRED's
object-location priors and reads ``traj_data.json`` beside ``game.tw-pddl`` for the goal.

ALFWorld 0.4.0 renamed the place action ``put X in/on Y`` to ``move X to Y`` (alfworld PR #94)
but the hand-coded expert's bookkeeping (``BasePolicy.update_state_tracking``) still looks for
"put" in the last command: after placing an object it believes it still holds it, so in
``pick_two_obj_and_place`` it wanders until its random escapes succeed (walkthroughs of 100+
steps, frequent failures; measured here). :func:`make_tw_env` therefore wraps the expert so
that it is *told* the last command in the old spelling; the engine still receives and
answers the command as given.

The expert draws from Python's global ``random`` (ties between visible objects, escapes from
repeated actions); :func:`expert_walkthrough` seeds it and restores its state afterwards, so
a walkthrough is a deterministic function of the game and the seed.

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import contextlib
import functools
import random
import re
import sys
from collections.abc import Iterator
from typing import Any

from smcplan.envs.alfworld_gen import _deps, speedups

EXPERT_MAX_STEPS = 200  # AlfredExpert's own limit (HandCodedTWAgent(max_steps=200))


@contextlib.contextmanager
def preserved_globals(seed: int | None = None) -> Iterator[None]:
    """Seed the global ``random`` (if ``seed`` is given) and restore it and ``sys.argv`` on exit.

    fast-downward's ``pddl2sas`` overwrites ``sys.argv`` on every translation.
    """
    argv = list(sys.argv)
    state = random.getstate()
    if seed is not None:
        random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)
        sys.argv[:] = argv


_MOVE = re.compile(r"^move (.+) to (.+)$")


def pre_040_spelling(command: str) -> str:
    """``"move apple 1 to fridge 1"`` -> ``"put apple 1 in/on fridge 1"`` (other commands as is)."""
    return _MOVE.sub(r"put \1 in/on \2", command)


@functools.cache
def _move_aware_expert_class() -> type:
    AlfredExpert = _deps.tw_modules()[4]

    class MoveAwareAlfredExpert(AlfredExpert):  # type: ignore[misc, valid-type]
        """``AlfredExpert`` whose hand-coded expert sees ``move`` commands spelled ``put``."""

        def _gather_infos(self) -> None:
            actual = self.prev_command
            self.prev_command = pre_040_spelling(actual)
            try:
                super()._gather_infos()
            finally:
                self.prev_command = actual

    return MoveAwareAlfredExpert


def make_tw_env(expert: bool = False) -> Any:
    """A fresh ``PddlEnv`` with ALFWorld's wrappers (and the hand-coded expert if ``expert``),
    with :mod:`~smcplan.envs.alfworld_gen.speedups` in place unless they were turned off."""
    textworld, PddlEnv, AlfredDemangler, AlfredInfos, _ = _deps.tw_modules()
    speedups.ensure()
    extras = ["gamefile"] + (["expert_plan"] if expert else [])
    infos = textworld.EnvInfos(admissible_commands=True, won=True, extras=extras)
    env = AlfredInfos(AlfredDemangler(PddlEnv(infos), shuffle=False))
    if expert:
        env = _move_aware_expert_class()(env, expert_type="handcoded")
    return env


def close_tw_env(env: Any) -> None:
    """Close the wrappers and free the planning task held by the env's copy of fast-downward.

    The private copy of ``libdownward.so`` each ``PddlEnv`` maps (~34 MB virtual, ~3 MB
    resident) stays mapped: ``fast_downward.close_lib`` (``dlclose``) crashes the interpreter
    at exit (segmentation fault observed here), so it is never called.
    """
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    lib = getattr(base, "downward_lib", None)
    env.close()
    if lib is not None:
        lib.cleanup()


def expert_walkthrough(
    game_path: str, seed: int, max_steps: int = EXPERT_MAX_STEPS
) -> list[str] | None:
    """Run the hand-coded expert on ``game_path``; its actions if it wins, else ``None``.

    ``traj_data.json`` must sit beside the game file.
    """
    env = make_tw_env(expert=True)
    try:
        with preserved_globals(seed):
            env.load(game_path)  # engine errors (bad PDDL, ...) propagate: they are bugs
            state = env.reset()
            actions: list[str] = []
            for _ in range(max_steps):
                try:
                    action = state["extra.expert_plan"][0]
                    state, _, done = env.step(action)
                except Exception:  # the expert gives up: Exception("Timeout"), NameError
                    return None
                actions.append(action)
                if state["won"]:
                    return actions
                if done:
                    return None
    finally:
        close_tw_env(env)
    return None
