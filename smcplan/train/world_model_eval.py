r"""Scoring a learned world model on held-out transitions (``smcplan train evaluate``).

Greedy decoding, each reply read by :func:`smcplan.llm.roles.world_outcome.parse_completion`
(the observation alone for a model with the old targets), then per example

* exact match: the normalised predicted observation equals the normalised truth (lower case,
  whitespace collapsed);
* token F1 (SQuAD's): with :math:`P`, :math:`T` the bags of lower-case word tokens of the
  prediction and the truth and :math:`c = |P \cap T|` (multiset), precision :math:`c/|P|`,
  recall :math:`c/|T|`, :math:`F_1 = 2c / (|P| + |T|)` (1 when both are empty);
* event match: both read as the same :func:`observation_event` (what the planner's twists see);

reported as means over the n examples with a normal-approximation 95 % interval for F1 and
Wilson intervals for the rest.  For a model that also predicts reward and done, the positive
events **reward** (a nonzero score change, :math:`|r| > 10^{-9}`) and **done** (the episode
ended, won or lost) are scored by precision :math:`TP / (TP + FP)` and recall
:math:`TP / (TP + FN)` over the examples (NaN where the denominator is 0), with the count of
replies whose outcome line did not parse (they count as reward 0, not done).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.eval.metrics import Z_95, wilson_interval
from smcplan.llm.roles.world_outcome import DEFAULT_TARGETS, check_targets, parse_completion

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "REWARD_EPS",
    "exact_match",
    "token_f1",
    "observation_event",
    "precision_recall",
    "WorldModelScore",
    "evaluate_world_model",
]

#: a score change larger than this in absolute value is a reward event
REWARD_EPS = 1e-9


def observation_event(observation: str, action: str | None = None) -> tuple[Any, ...]:
    """What a planner's twist reads from an observation (:mod:`smcplan.planning.seen`): the
    place it puts the agent in (``None``: it names none), whether it is a failure or no-op
    reply, and the room an opened door reveals (``None``: none)."""
    from smcplan.planning.places import revealed_place
    from smcplan.planning.seen import looks_failed, place_and_entities

    text = " ".join(str(observation).split())
    place, _names = place_and_entities(text, action)
    return (place, looks_failed(text), revealed_place(text))


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def exact_match(prediction: str, truth: str) -> bool:
    """Equal after lower-casing and collapsing whitespace."""
    return " ".join(prediction.lower().split()) == " ".join(truth.lower().split())


def token_f1(prediction: str, truth: str) -> float:
    """SQuAD token F1, :math:`2c / (|P| + |T|)` over lower-case word tokens (1 if both empty)."""
    p, t = _tokens(prediction), _tokens(truth)
    if not p and not t:
        return 1.0
    common = sum((Counter(p) & Counter(t)).values())
    return 2.0 * common / (len(p) + len(t))


def precision_recall(predicted: Sequence[bool], true: Sequence[bool]) -> dict[str, Any]:
    """``{"precision", "recall", "tp", "predicted", "true"}`` of a binary event: precision
    :math:`TP/(TP+FP)`, recall :math:`TP/(TP+FN)`, NaN when the denominator is 0."""
    if len(predicted) != len(true):
        raise InvalidArgumentError(
            f"precision_recall: {len(predicted)} predictions for {len(true)} truths; give one each"
        )
    tp = sum(bool(p) and bool(t) for p, t in zip(predicted, true, strict=True))
    n_pred, n_true = sum(map(bool, predicted)), sum(map(bool, true))
    return {
        "precision": tp / n_pred if n_pred else float("nan"),
        "recall": tp / n_true if n_true else float("nan"),
        "tp": tp,
        "predicted": n_pred,
        "true": n_true,
    }


@dataclass
class WorldModelScore:
    """Exact match, token F1 and event match over ``n`` held-out examples (95 % intervals);
    ``event``: the fraction whose prediction reads as the same :func:`observation_event` as the
    truth (what the planner's twists see), over all examples and over the branches alone;
    ``targets``: what the model writes; ``reward`` / ``done``: :func:`precision_recall` of the
    reward and done events (``None`` for a model that does not predict them);
    ``unparsed_outcome``: replies whose outcome line did not parse."""

    n: int
    exact: float
    exact_ci: tuple[float, float]
    f1: float
    f1_ci: tuple[float, float]
    seconds: float
    predictions: list[dict[str, Any]]
    event: float = float("nan")
    event_ci: tuple[float, float] = (float("nan"), float("nan"))
    branches: int = 0
    branch_event: float = float("nan")
    targets: tuple[str, ...] = DEFAULT_TARGETS
    reward: dict[str, Any] | None = None
    done: dict[str, Any] | None = None
    unparsed_outcome: int = 0

    def to_dict(self, with_predictions: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_predictions:
            out.pop("predictions")
        return out

    def outcome_line(self) -> str:
        """``reward P=.. R=.. done P=.. R=..`` (empty for a model without those targets)."""
        if self.reward is None and self.done is None:
            return ""
        parts = [
            f"{name} P={d['precision']:.3f} R={d['recall']:.3f} ({d['true']} true)"
            for name, d in (("reward", self.reward), ("done", self.done))
            if d is not None
        ]
        return " ".join(parts) + f" unparsed={self.unparsed_outcome}"


def _truth(ex: dict[str, Any], targets: Sequence[str]) -> tuple[str, float, str]:
    """The true observation, reward and ending of an example: its ``reward`` / ``ending``
    fields where it has them (:func:`~smcplan.train.world_model.world_model_examples`), else
    read from its completion."""
    read = parse_completion(ex["completion"], targets)
    return (
        read.observation,
        float(ex.get("reward", read.reward)),
        str(ex.get("ending", read.ending)),
    )


def evaluate_world_model(
    lm: LanguageModel,
    examples: Sequence[dict[str, Any]],
    max_new_tokens: int = 128,
    batch_size: int = 8,
    progress: bool = True,
    targets: Sequence[str] | None = None,
) -> WorldModelScore:
    """Greedy predictions of ``lm`` on ``examples``, scored (module docstring).  ``targets``:
    what the model writes (default: the examples' own ``targets`` field, else the next
    observation alone)."""
    from tqdm import tqdm

    check_int(max_new_tokens, "max_new_tokens", minimum=1)
    check_int(batch_size, "batch_size", minimum=1)
    if not examples:
        raise InvalidArgumentError("no examples to evaluate; collect held-out transitions first")
    targets = check_targets(targets or examples[0].get("targets") or DEFAULT_TARGETS)
    outcome = "reward" in targets or "done" in targets
    t0, preds = time.perf_counter(), []
    for i in tqdm(range(0, len(examples), batch_size), desc="evaluate", disable=not progress):
        batch = examples[i : i + batch_size]
        texts = lm.generate(
            [ex["prompt"] for ex in batch],
            None,
            temperature=0.0,
            max_new_tokens=max_new_tokens,
            seed=0,
        )
        for ex, text in zip(batch, texts, strict=True):
            read = parse_completion(str(text), targets)
            said = " ".join(read.observation.split())
            truth, reward, ending = _truth(ex, targets)
            row = {
                "episode": ex.get("episode"),
                "t": ex.get("t"),
                "truth": ex["completion"],
                "prediction": " ".join(str(text).split()),
                "exact": exact_match(said, truth),
                "f1": token_f1(said, truth),
                "event": observation_event(said, ex.get("action"))
                == observation_event(truth, ex.get("action")),
                "branch": bool(ex.get("branch", False)),
            }
            if outcome:
                row.update(
                    reward=read.reward, reward_ok=read.reward_ok, ending=read.ending,
                    done_ok=read.done_ok, true_reward=reward, true_ending=ending,
                )  # fmt: skip
            preds.append(row)
    n = len(preds)
    k = sum(p["exact"] for p in preds)
    f1s = [p["f1"] for p in preds]
    mean = sum(f1s) / n
    sd = math.sqrt(sum((f - mean) ** 2 for f in f1s) / (n - 1)) if n > 1 else 0.0
    half = Z_95 * sd / math.sqrt(n)
    events = sum(p["event"] for p in preds)
    on_branches = [p["event"] for p in preds if p["branch"]]
    score = WorldModelScore(
        n, k / n, wilson_interval(k, n), mean, (mean - half, mean + half),
        time.perf_counter() - t0, preds, events / n, wilson_interval(events, n),
        len(on_branches),
        sum(on_branches) / len(on_branches) if on_branches else float("nan"),
        targets,
    )  # fmt: skip
    if "reward" in targets:
        score.reward = precision_recall(
            [abs(p["reward"]) > REWARD_EPS for p in preds],
            [abs(p["true_reward"]) > REWARD_EPS for p in preds],
        )
    if "done" in targets:
        score.done = precision_recall(
            [p["ending"] != "no" for p in preds], [p["true_ending"] != "no" for p in preds]
        )
    if outcome:
        score.unparsed_outcome = sum(
            ("reward" in targets and not p["reward_ok"]) or ("done" in targets and not p["done_ok"])
            for p in preds
        )
    return score
