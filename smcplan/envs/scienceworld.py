"""ScienceWorld adapter: the 30 tasks of Wang et al. (2022) behind ``TextEnv``.

ScienceWorld is a Scala simulator of an elementary-school science curriculum (boiling, circuits,
genetics, ...): 30 tasks in 10 topics, each with 10-1,386 *variations* (objects, substances,
rooms) split by the authors into train / dev / test lists.  Here ``reset(seed)`` takes the
variation index; its split is inferred and checked.  Scores are 0-100 in the backend, with -100
on a failed task; they are normalised to ``score = clip(raw / 100, 0, 1)`` and ``won`` means
``raw >= 100``.

The usual simplifications (``"easy"`` = teleport actions, open doors and containers,
self-watering flower pots, and no electrical actions except in the electrical tasks, where the
simulator keeps them) are on by default, as in the ScienceWorld paper's agent baselines.

Two behaviours of the simulator are handled here:

* *Ambiguous requests* ("Ambiguous request: Please enter the number ...") are resolved with
  choice ``0``, the choice the simulator's own gold paths make; the bare numbers in the gold
  sequence are dropped from ``gold_actions()`` accordingly.
* The admissible actions are the simulator's *valid action-object combinations*, recomputed
  after every step (this dominates the step time: ~50 ms of ~55 ms).

``clone()`` builds a second simulator in the same JVM and replays the episode (the simulator
is deterministic given task, variation and simplifications; it has no state snapshot).

Reference: R. Wang, P. Jansen, M.-A. Côté, P. Ammanabrolu, "ScienceWorld: Is your Agent
Smarter than a 5th Grader?", EMNLP 2022.

Imports ``scienceworld`` lazily; nothing from other smcplan layers except
``smcplan.envs.base`` and ``smcplan.envs._jvm``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smcplan.envs._jvm import DEFAULT_CALL_TIMEOUT_S, JavaProcess, JvmBacked
from smcplan.envs.base import BaseTextEnv, MissingBenchmark, unknown_choice

__all__ = ["TASKS", "TASK_IDS", "SIMPLIFICATIONS", "SPLITS", "ScienceWorldEnv"]

#: Gold paths generated in this process, by (task, variation, simplifications): see
#: ``ScienceWorldEnv.gold_actions``.
_GOLD_PATHS: dict[tuple[str, int, str], list[str]] = {}

#: The 30 task names, in the order of the ScienceWorld paper (task ids 1-1 ... 10-2).
TASKS = (
    "boil",
    "melt",
    "freeze",
    "change-the-state-of-matter-of",
    "use-thermometer",
    "measure-melting-point-known-substance",
    "measure-melting-point-unknown-substance",
    "power-component",
    "power-component-renewable-vs-nonrenewable-energy",
    "test-conductivity",
    "test-conductivity-of-unknown-substances",
    "find-living-thing",
    "find-non-living-thing",
    "find-plant",
    "find-animal",
    "grow-plant",
    "grow-fruit",
    "chemistry-mix",
    "chemistry-mix-paint-secondary-color",
    "chemistry-mix-paint-tertiary-color",
    "lifespan-longest-lived",
    "lifespan-shortest-lived",
    "lifespan-longest-lived-then-shortest-lived",
    "identify-life-stages-1",
    "identify-life-stages-2",
    "inclined-plane-determine-angle",
    "inclined-plane-friction-named-surfaces",
    "inclined-plane-friction-unnamed-surfaces",
    "mendelian-genetics-known-plant",
    "mendelian-genetics-unknown-plant",
)

#: Paper task id (e.g. ``"1-1"``) -> task name.
TASK_IDS = dict(
    zip(
        [
            "1-1", "1-2", "1-3", "1-4", "2-1", "2-2", "2-3", "3-1", "3-2", "3-3", "3-4", "4-1",
            "4-2", "4-3", "4-4", "5-1", "5-2", "6-1", "6-2", "6-3", "7-1", "7-2", "7-3", "8-1",
            "8-2", "9-1", "9-2", "9-3", "10-1", "10-2",
        ],
        TASKS,
        strict=True,
    )
)

SIMPLIFICATIONS = (
    "easy",
    "teleportAction",
    "selfWateringFlowerPots",
    "openContainers",
    "openDoors",
    "noElectricalAction",
)
SPLITS = ("train", "dev", "test")

_INTERFACE = "scienceworld.runtime.pythonapi.PythonInterface"
_NOT_UNDERSTOOD = "No known action matches that input."
_AMBIGUOUS = "Ambiguous request"
_ELECTRICAL = ("power-component", "conductivity")
# task -> ({split: variations}, number of variations); fixed by the jar, so cached per process.
_VARIATIONS: dict[str, tuple[dict[str, list[int]], int]] = {}


def _jar() -> tuple[str, str]:
    try:
        from scienceworld.constants import BASEPATH, JAR_PATH
    except ImportError as exc:
        raise MissingBenchmark(
            "ScienceWorld is not installed: pip install 'smcplan[bench]' (scienceworld==1.2.3)"
        ) from exc
    return JAR_PATH, BASEPATH


def _simplification_string(simplifications: str | Sequence[str] | None, task: str) -> str:
    if simplifications is None:
        return ""
    parts = (
        [p for p in simplifications.split(",") if p]
        if isinstance(simplifications, str)
        else list(simplifications)
    )
    for p in parts:
        if p not in SIMPLIFICATIONS:
            raise unknown_choice("ScienceWorld simplification", p, SIMPLIFICATIONS)
    if "noElectricalAction" in parts and any(k in task for k in _ELECTRICAL):
        raise ValueError(
            f"ScienceWorld task {task!r} needs electrical actions; drop 'noElectricalAction' "
            "(the 'easy' preset keeps them for this task)"
        )
    return ",".join(parts)


def clean_gold(sequence: Sequence[str]) -> list[str]:
    """Drop the bare numbers with which the simulator's gold answers its ambiguity prompts."""
    return [a for a in sequence if not a.strip().isdigit()]


class ScienceWorldEnv(JvmBacked, BaseTextEnv):
    """One ScienceWorld task (``scienceworld:<task>``).

    Args:
        task: a name of ``TASKS`` or a paper id such as ``"1-1"``.
        simplifications: ``"easy"`` (default), ``""`` for none, or a comma list / sequence of
            ``SIMPLIFICATIONS``.
        split: restrict ``reset`` variations to ``train``/``dev``/``test``; by default any
            variation is accepted.
        seed: the variation ``reset()`` uses when called without one (default: the first of
            ``split``, or of ``test`` when no split is given).
        max_steps: step limit per episode (the simulator's default limit is 100; a few gold
            paths are longer, up to 178 steps).
        call_timeout_s: time limit of one backend call.
    """

    def __init__(
        self,
        task: str,
        *,
        simplifications: str | Sequence[str] | None = "easy",
        split: str | None = None,
        seed: int | None = None,
        max_steps: int = 100,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        _share: JavaProcess | None = None,
    ) -> None:
        task = TASK_IDS.get(task, task)
        if task not in TASKS:
            raise unknown_choice("ScienceWorld task", task, TASKS)
        if split is not None and split not in SPLITS:
            raise unknown_choice("ScienceWorld split", split, SPLITS)
        super().__init__(f"scienceworld:{task}", max_steps)
        self.task_name = task
        self.simplifications = _simplification_string(simplifications, task)
        self.split = split
        self.call_timeout_s = call_timeout_s
        self._requested_seed = seed
        self._jvm: JavaProcess | None = None
        self._sim: Any = None
        self._sent: list[str] = []  # every string sent to the simulator since reset (replay)
        self._gold: list[str] | None = None
        self._closed = False
        self._variations: dict[str, list[int]] = {}
        self._max_variations = 0
        self._init_backend(call_timeout_s, _share)

    # -- backend --------------------------------------------------------------------------
    def _start(self) -> None:
        """(Re)create the simulator and bring it to the current episode state (replay)."""
        self._ensure_jvm(_jar, JavaProcess)
        self._sim = self._jvm.new(_INTERFACE)
        if self._started and self._seed is not None:
            self._load(self._seed, gold=False)
            for text in self._sent:
                self._sim.step(text)

    def _load(self, variation: int, gold: bool) -> None:
        self._sim.load(self.task_name, variation, self.simplifications, gold)
        self._sim.reset()
        self._sim.step("look around")

    def variations(self, split: str) -> list[int]:
        """The simulator's variation indices of ``split`` for this task."""
        if split not in SPLITS:
            raise unknown_choice("ScienceWorld split", split, SPLITS)
        if not self._variations:
            self._fetch_variations()
        return list(self._variations[split])

    def _fetch_variations(self) -> None:
        cached = _VARIATIONS.get(self.task_name)
        if cached is None:

            def fetch() -> tuple[dict[str, list[int]], int]:
                # A throwaway simulator in the same JVM, so that the episode is not disturbed.
                probe = self._jvm.new(_INTERFACE)
                probe.load(self.task_name, 0, self.simplifications, False)
                lists = {
                    "train": [int(v) for v in probe.getVariationsTrain()],
                    "dev": [int(v) for v in probe.getVariationsDev()],
                    "test": [int(v) for v in probe.getVariationsTest()],
                }
                return lists, int(probe.getTaskMaxVariations(self.task_name))

            cached = self._sup.call(fetch, "variation lists")
            _VARIATIONS[self.task_name] = cached
        lists, self._max_variations = cached
        self._variations = {k: list(v) for k, v in lists.items()}

    def _check_variation(self, variation: int) -> None:
        if not self._variations:
            self._fetch_variations()
        if self.split is not None:
            allowed = self._variations[self.split]
            if variation not in allowed:
                raise ValueError(
                    f"{self.name}: variation {variation} is not in split {self.split!r}; "
                    f"valid: {_ranges(allowed)}"
                )
        elif not 0 <= variation < self._max_variations:
            raise ValueError(
                f"{self.name}: unknown variation {variation}; valid: 0-{self._max_variations - 1}"
                f" (train {_ranges(self._variations['train'])}, dev "
                f"{_ranges(self._variations['dev'])}, test {_ranges(self._variations['test'])})"
            )

    # -- protocol -------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        if seed is None:
            seed = self._requested_seed
        if seed is None:
            seed = self.variations(self.split or "test")[0]
        variation = int(seed)
        self._check_variation(variation)

        def load() -> tuple[str, str, list[str]]:
            self._sim.load(self.task_name, variation, self.simplifications, False)
            self._sim.reset()
            observation = str(self._sim.step("look around"))
            return observation, str(self._sim.getTaskDescription()), self._valid()

        observation, task, admissible = self._sup.call(load, "reset")
        self._sent = []
        self._gold = None
        return self._begin(
            observation,
            task=task,
            admissible=admissible,
            seed=variation,
            extra={"raw_score": 0.0, "variation": variation, "split": self._split_of(variation)},
        )

    def _valid(self) -> list[str]:
        return sorted(set(str(a) for a in self._sim.getValidActionObjectCombinations()))

    def _split_of(self, variation: int) -> str | None:
        for split, values in self._variations.items():
            if variation in values:
                return split
        return None

    def step(self, action: str):
        self._require_running()

        def act() -> tuple[str, list[str], float, bool, list[str]]:
            sent = [action]
            observation = str(self._sim.step(action))
            if observation.startswith(_AMBIGUOUS):
                sent.append("0")
                observation = str(self._sim.step("0"))
            return observation, sent, float(self._sim.getScore()), bool(
                self._sim.getCompleted()
            ), self._valid()

        observation, sent, raw, completed, admissible = self._sup.call(act, f"step {action!r}")
        self._sent.extend(sent)
        return self._finish(
            observation,
            action,
            score=raw,
            won=raw >= 1.0,
            invalid=observation.startswith(_NOT_UNDERSTOOD),
            backend_done=completed or raw < 0,
            admissible=admissible,
            extra={"raw_score": 100.0 * raw, "ambiguous": len(sent) > 1},
        )

    def gold_actions(self) -> list[str] | None:
        """The simulator's gold path from the reset state (ambiguity choices removed).

        Computed on first request by a second simulator in the same JVM (generating it costs
        0.1-10 s depending on the task, so ``reset`` does not pay for it).  The path may go on
        for a few actions after the task is already won.

        The path depends on what the JVM did before (object hash order), so a second generation
        for one variation may order its steps differently or pick another object of the same kind
        (boil: the order of its ``open`` actions; find-non-living-thing: which thing); each wins.
        The first one generated for (task, variation, simplifications) is therefore kept for the
        process: the same list on every reset here.  A fresh process asking first gets the same
        path again; one whose JVM did other work first may get another.
        """
        self._require_started()
        if self._gold is None:
            variation = self._seed
            key = (self.task_name, variation, self.simplifications)

            def fetch() -> list[str]:
                probe = self._jvm.new(_INTERFACE)
                probe.load(self.task_name, variation, self.simplifications, True)
                return [str(a) for a in probe.getGoldActionSequence()]

            if key not in _GOLD_PATHS:
                _GOLD_PATHS[key] = clean_gold(self._sup.call(fetch, "gold path"))
            self._gold = _GOLD_PATHS[key]
        return list(self._gold)

    def clone(self) -> ScienceWorldEnv:
        """An independent copy in the same state: a second simulator in the same JVM, replayed."""
        self._require_started()
        twin = ScienceWorldEnv(
            self.task_name,
            simplifications=self.simplifications,
            split=self.split,
            seed=self._requested_seed,
            max_steps=self.max_steps,
            call_timeout_s=self.call_timeout_s,
            _share=self._jvm if self._jvm_alive() else None,
        )
        for attr in ("_task", "_score", "_steps", "_done", "_won", "_started", "_seed",
                     "_gold", "_max_variations"):
            setattr(twin, attr, getattr(self, attr))
        twin._variations = {k: list(v) for k, v in self._variations.items()}
        twin._admissible = list(self._admissible)
        twin._actions = list(self._actions)
        twin._sent = list(self._sent)
        twin._sup.call(twin._start, "clone replay")
        return twin


def _ranges(values: Sequence[int]) -> str:
    """Compact ``0-13, 20, 22-25`` rendering of sorted integers."""
    values = sorted(values)
    if not values:
        return "(none)"
    out, start, prev = [], values[0], values[0]
    for v in values[1:]:
        if v == prev + 1:
            prev = v
            continue
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
        start = prev = v
    out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)
