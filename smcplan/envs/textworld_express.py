"""TextWorldExpress adapter: the 8 games of Jansen & Côté (2022) behind ``TextEnv``.

TextWorldExpress ("TWX") is a Scala re-implementation of TextWorld-style games (CookingWorld,
TextWorld Commonsense, Coin Collector, Map Reader, Arithmetic, Sorting, Simon Says, Pecking
Order) that runs 1,000s of steps per second.  Each game is generated from an integer seed; the
seed space is split into folds (train 0-999, dev 10000-10999, test 20000-20999), and the fold
also selects which object vocabulary a game may use (e.g. TWC's held-out objects), so the fold
is inferred from the seed and checked.

Backend calls go straight to the jar's ``PythonInterface`` in a supervised JVM
(``smcplan.envs._jvm``): every call is time-bounded, a dead or hung JVM is restarted once and
the episode replayed, then a typed error is raised.  ``clone()`` creates a second simulator in
the same JVM and replays the episode's actions (TWX has no state snapshot).

Reference: P. Jansen, M.-A. Côté, "TextWorldExpress: Simulating Text Games at One Million
Steps Per Second", EACL 2023 demo.

Imports ``textworld_express`` lazily; nothing from other smcplan layers except
``smcplan.envs.base`` and ``smcplan.envs._jvm``.
"""

from __future__ import annotations

import json
from typing import Any

from smcplan.envs._jvm import DEFAULT_CALL_TIMEOUT_S, JavaProcess, JvmBacked
from smcplan.envs.base import BaseTextEnv, MissingBenchmark, unknown_choice
from smcplan.errors import check_text

__all__ = ["GAMES", "FOLDS", "TextWorldExpressEnv", "fold_of_seed"]

#: The eight games, in the order of the TWX paper.
GAMES = (
    "cookingworld",
    "twc",
    "coin",
    "arithmetic",
    "mapreader",
    "sorting",
    "simonsays",
    "peckingorder",
)

#: Seed ranges of the three folds (inclusive), as reported by the jar's ``getSeeds*``
#: (checked against the backend in the tests).
FOLDS: dict[str, range] = {
    "train": range(0, 1000),
    "dev": range(10000, 11000),
    "test": range(20000, 21000),
}

_INTERFACE = "textworldexpress.runtime.PythonInterface"
_GOLD_AGENTS = "textworldexpress.goldagent"  # <Game>GoldAgent for GameGenerator<Game>
_GOLD_ATTEMPTS = 50  # the jar's MAX_ATTEMPTS in mkGameWithGoldPath
_UNKNOWN_ACTION = "Unknown action"


def fold_of_seed(seed: int) -> str:
    """The fold (``train``/``dev``/``test``) whose seed range holds ``seed``."""
    for fold, seeds in FOLDS.items():
        if seed in seeds:
            return fold
    ranges = ", ".join(f"{f} {r.start}-{r.stop - 1}" for f, r in FOLDS.items())
    raise ValueError(f"TextWorldExpress seed {seed} is in no fold; valid seeds: {ranges}")


def _jar() -> tuple[str, str]:
    try:
        from textworld_express.constants import BASEPATH, JAR_PATH
    except ImportError as exc:
        raise MissingBenchmark(
            "TextWorldExpress is not installed: pip install 'smcplan[bench]' "
            "(textworld-express==1.1.0)"
        ) from exc
    return JAR_PATH, BASEPATH


def _params_string(params: dict[str, Any] | str | None) -> str:
    if params is None:
        return ""
    if isinstance(params, str):
        return check_text(params, "TextWorldExpress params")
    text = ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in params.items())
    return check_text(text, "TextWorldExpress params")


class TextWorldExpressEnv(JvmBacked, BaseTextEnv):
    """One TWX game (``twx:<game>``).

    Args:
        game: one of ``GAMES``.
        params: game parameters, e.g. ``{"numLocations": 5, "includeDoors": 0}`` (the jar
            validates names and ranges and its message is re-raised as ``ValueError``).
        split: restrict ``reset`` seeds to one fold (``train``/``dev``/``test``); by default
            any seed of any fold is accepted and the fold is inferred from it.
        seed: the seed ``reset()`` uses when called without one (default: the split's first).
        max_steps: step limit per episode (TWX's own default ``envStepLimit`` is 100).
        call_timeout_s: time limit of one backend call.
    """

    def __init__(
        self,
        game: str,
        *,
        params: dict[str, Any] | str | None = None,
        split: str | None = None,
        seed: int | None = None,
        max_steps: int = 100,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        _share: JavaProcess | None = None,
        _replay_from: TextWorldExpressEnv | None = None,
    ) -> None:
        if game not in GAMES:
            raise unknown_choice("TextWorldExpress game", game, GAMES)
        if split is not None and split not in FOLDS:
            raise unknown_choice("TextWorldExpress split", split, FOLDS)
        super().__init__(f"twx:{game}", max_steps)
        self.game = game
        self.params = _params_string(params)
        self.split = split
        self.default_seed = seed if seed is not None else FOLDS[split or "train"].start
        self.call_timeout_s = call_timeout_s
        self._jvm: JavaProcess | None = None
        self._sim: Any = None
        self._gold: list[str] | None = None
        self._fold: str | None = None
        self._closed = False
        if _replay_from is not None:  # clone(): the one start replays the other's episode
            self._copy_episode_from(_replay_from)
        self._init_backend(call_timeout_s, _share)

    # -- backend --------------------------------------------------------------------------
    def _start(self) -> None:
        """(Re)create the simulator and bring it to the current episode state (replay)."""
        self._ensure_jvm(_jar, JavaProcess)
        sim = self._jvm.new(_INTERFACE)
        message = sim.load(self.game, self.params)
        if message:
            raise ValueError(f"{self.name}: params {self.params!r} rejected: {message.strip()}")
        self._sim = sim
        if self._started and self._seed is not None:
            sim.generateNewGameJSON(self._seed, self._fold, False)
            for action in self._actions:
                sim.stepJSON(action)

    # -- protocol -------------------------------------------------------------------------
    def check_seed(self, seed: int) -> str:
        """The fold of ``seed``; ``ValueError`` naming the valid seeds when it is in no fold or
        not in this env's ``split`` (what :meth:`reset` would refuse, without starting a game)."""
        fold = fold_of_seed(int(seed))
        if self.split is not None and fold != self.split:
            r = FOLDS[self.split]
            raise ValueError(
                f"{self.name}: seed {seed} is in fold {fold!r}, not in split {self.split!r} "
                f"(seeds {r.start}-{r.stop - 1})"
            )
        return fold

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        seed = self.default_seed if seed is None else int(seed)
        fold = self.check_seed(seed)
        # The gold path first, then the game without the jar's own (drawn with an unseeded RNG):
        # the jar's order, as some generators share objects between the games they make (a
        # gold agent playing a second sorting game moves the items of the first).
        gold = self._sup.call(lambda: self._seeded_gold(seed, fold), "gold")
        raw = json.loads(
            self._sup.call(lambda: self._sim.generateNewGameJSON(seed, fold, False), "reset")
        )
        self._fold = fold
        self._gold = gold
        task = str(self._sup.call(self._sim.getTaskDescription, "task"))
        return self._begin(
            raw["observation"],
            task=task,
            admissible=sorted(raw["validActions"]),
            seed=seed,
            score=float(raw["score"]),
            extra=self._extra(raw, seed=seed, fold=fold),
        )

    def step(self, action: str):
        self._require_running()
        raw = json.loads(self._sup.call(lambda: self._sim.stepJSON(action), f"step {action!r}"))
        observation = raw["observation"]
        return self._finish(
            observation,
            action,
            score=float(raw["score"]),
            won=bool(raw["tasksuccess"]),
            invalid=observation.startswith(_UNKNOWN_ACTION),
            backend_done=bool(raw["tasksuccess"] or raw["taskfailure"]),
            admissible=sorted(raw["validActions"]),
            extra=self._extra(raw),
        )

    def gold_actions(self) -> list[str] | None:
        """TWX's gold action sequence from the reset state (it wins with score 1.0): the jar's own
        gold agent for the game, its random choices drawn from ``scala.util.Random(seed)``, so
        the same list on every reset of a seed (see :meth:`_seeded_gold`).  ``None`` when the
        agent found no path."""
        self._require_started()
        return list(self._gold) if self._gold is not None else None

    def _seeded_gold(self, seed: int, fold: str) -> list[str] | None:
        """The jar's ``mkGameWithGoldPath`` with a seeded RNG.

        TWX 1.1.0 builds a game's gold path with ``new Random()`` (seeded from the clock) in every
        game but CookingWorld (``new Random(seed)``); the coin and TWC gold agents random-walk
        the map with it, so their gold paths differed on each reset of one seed (coin test seed
        20000: 5-18 actions over 6 resets).  This runs the same loop in the JVM (up to 50 fresh
        games of the seed, the game's gold agent on each, one RNG throughout) with
        ``scala.util.Random(seed)``: for CookingWorld that is the jar's own path, for the games
        whose gold agents draw nothing it is the jar's path too, and for coin and TWC it is one
        fixed random walk per seed (and params).
        """
        generator = self._sim.gameGenerator()
        kind = str(generator.getClass().getSimpleName()).removeprefix("GameGenerator")
        rng = self._jvm.new("scala.util.Random", seed)
        for _ in range(_GOLD_ATTEMPTS):
            agent = self._jvm.new(f"{_GOLD_AGENTS}.{kind}GoldAgent", generator.mkGame(seed, fold))
            found = agent.mkGoldPath(rng)  # a Scala (Boolean, Array[String])
            if found.productElement(0):
                return [str(a) for a in found.productElement(1)]
        return None

    def generation_properties(self) -> dict[str, Any]:
        """The game's generation parameters (e.g. ``numLocations``), as the jar reports them."""
        return json.loads(self._sup.call(self._sim.getGenerationPropertiesJSON, "properties"))

    def clone(self) -> TextWorldExpressEnv:
        """An independent copy in the same state: a second simulator in the same JVM, replayed."""
        self._require_started()
        twin = TextWorldExpressEnv(
            self.game,
            params=self.params,
            split=self.split,
            seed=self.default_seed,
            max_steps=self.max_steps,
            call_timeout_s=self.call_timeout_s,
            _share=self._jvm if self._jvm_alive() else None,
            _replay_from=self,
        )
        return twin

    def _copy_episode_from(self, other: TextWorldExpressEnv) -> None:
        for attr in ("_task", "_score", "_steps", "_done", "_won", "_started", "_seed",
                     "_fold", "_gold"):
            setattr(self, attr, getattr(other, attr))
        self._admissible = list(other._admissible)
        self._actions = list(other._actions)

    @staticmethod
    def _extra(raw: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {
            "raw_score": float(raw.get("scoreRaw", raw["score"])),
            "look": raw.get("look", ""),
            "inventory": raw.get("inventory", ""),
            **more,
        }
