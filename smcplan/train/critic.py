r"""RLAW's critic, trained: simulator labels, LoRA SFT with TRL, AUC against the prompted critic.

**Labels** (from the simulator's optimal path).  A *gold* shard (``smcplan train collect
--source gold``) holds, per state :math:`s_t` on the environment's gold path (TextWorldExpress'
``getGoldActionSequence``: the simulator's own solution), the gold action :math:`g_t` and the
admissible set :math:`A_t`.  Each candidate :math:`a \in A_t` is labelled

.. math:: y(s_t, a) = [a = g_t]

(1: the action lies on the oracle path).  Chosen over Monte Carlo values from simulator clones
because it is exact and costs one replay per seed; its limits: only states on the gold path are
labelled, and an action that ties with the gold one (another optimal move) is labelled 0.

**Examples** are the critic prompt the RLAW agent sends (:class:`smcplan.llm.Critic` on the
``critic`` role: task, the agent's situation — retrieved facts and the current observation, as
``Context.situation()`` renders them for the KG context —, the thought and the action), with the
thought ``"I will <action>."`` (shards hold no actor thoughts), and the completion the role's
JSON, ``{"logic_check": true, "safety_check": true, "critique_score": 1.0 | 0.0, "reason":
...}``: the label is carried by the score, so a trained critic accepts (``score >= tau = 0.7``)
the actions it believes lie on the optimal path.  Negatives are subsampled to
``negatives_per_state`` per state (default 2) to keep the classes near balance.  With
``map_notes=True`` each prompt also says what the agent's place map, read from the episode's
earlier real observations, says about the action (:mod:`smcplan.agents.map_notes`: the state
of its door, whether it leads back to a visited room, the closed doors left); the manifest
records it and the RLAW agent then gives its critic the same notes.

**Training**: RLAW's hyperparameters: LoRA r = 16, alpha = 32 on W_q, W_k, W_v, W_o, AdamW
lr 2e-4 with a cosine schedule down to 1e-5 (``cosine_with_min_lr``), weight decay 0.01, 3
epochs, effective batch 64 (``batch_size`` x ``grad_accum``).

**Score and AUC**: the critic's score of an action is its *expected* critique score,
:math:`\sum_v v\, p(v) / \sum_v p(v)` over the 11 allowed values after the answer's prefix
``{"logic_check": true, "safety_check": true, "critique_score": `` (one scoring call; the
constrained decoder's choice among the same values, without its token-level renormalisation).
The AUC is the Mann-Whitney statistic (ties count 1/2), with a bootstrap interval that resamples
*states* (the actions of one state are not independent).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.llm.roles.score_head import CRITIC_PREFIX, action_thought
from smcplan.train.data import subsample_and_save, write_sft_manifest

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "SCORES",
    "PREFIX",
    "critic_labels",
    "critic_examples",
    "auc",
    "CriticScore",
    "score_actions",
    "evaluate_critic",
    "summarise_scores",
    "auc_difference",
    "train_critic",
    "run",
]

#: the critique scores the role's schema allows
SCORES = tuple(round(0.1 * k, 1) for k in range(11))
#: the answer up to the score, as the trained completions write it (the score head reads the
#: position right after it: the same constant)
PREFIX = CRITIC_PREFIX
REASONS = {
    1: "The action is the next step of the shortest way to complete the task.",
    0: "The action does not lead toward completing the task.",
}


def critic_labels(
    transitions: Iterable[dict[str, Any]], maps: dict[tuple[str, int], Any] | None = None
) -> list[dict[str, Any]]:
    """``{"episode", "t", "task", "observation", "facts", "action", "label", "note"}`` for every
    admissible action of every state of gold-path ``transitions`` (module docstring).

    ``maps`` (:func:`smcplan.agents.map_notes.episode_maps` of the *whole* shard, so that a
    sample of its states still has each state's history) adds each action's map note
    (:func:`smcplan.agents.map_notes.action_note`, what a critic with ``notes`` sees at run
    time); without it every note is empty and the prompt is the plain one."""
    from smcplan.agents.map_notes import action_note

    out = []
    for tr in transitions:
        admissible = list(tr.get("admissible") or [])
        if tr["action"] not in admissible:
            admissible.append(tr["action"])
        m = None if maps is None else maps.get((str(tr["episode"]), int(tr["t"])))
        if maps is not None and m is None:
            raise InvalidArgumentError(
                f"maps: no place map for {tr['episode']} t={tr['t']}; build them with "
                "episode_maps(<the whole shard>)"
            )
        for a in admissible:
            out.append(
                {
                    "episode": tr["episode"],
                    "t": tr["t"],
                    "task": tr["task"],
                    "observation": tr["observation"],
                    "facts": tr.get("facts", []),
                    "action": a,
                    "label": int(a == tr["action"]),
                    "note": "" if m is None else action_note(m, a, first_step=tr["t"] == 0),
                }
            )
    return out


def _prompt(row: dict[str, Any]) -> list[dict[str, str]]:
    from smcplan.agents.context import Context
    from smcplan.llm.templates import load_role

    facts = [tuple(f) for f in row["facts"]]
    situation = Context(row["task"], row["observation"], triplets=facts).situation()
    return load_role("critic").messages(
        task=row["task"],
        context=situation,
        thought=action_thought(row["action"]),
        action=row["action"],
        note=row.get("note", ""),
    )


def critic_examples(
    labels: Sequence[dict[str, Any]], negatives_per_state: int | None = 2, seed: int = 0
) -> list[dict[str, Any]]:
    """SFT examples (prompt, completion, label, episode, t, action) from :func:`critic_labels`;
    at most ``negatives_per_state`` negatives per state (``None``: all), drawn with ``seed``."""
    if negatives_per_state is not None:
        check_int(negatives_per_state, "negatives_per_state", minimum=0)
    rng = random.Random(seed)
    by_state: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in labels:
        by_state.setdefault((row["episode"], row["t"]), []).append(row)
    out = []
    for rows in by_state.values():
        pos = [r for r in rows if r["label"]]
        neg = [r for r in rows if not r["label"]]
        if negatives_per_state is not None and len(neg) > negatives_per_state:
            neg = rng.sample(neg, negatives_per_state)
        for r in pos + neg:
            answer = PREFIX + json.dumps(float(r["label"])) + ', "reason": '
            answer += json.dumps(REASONS[r["label"]]) + "}"
            out.append(
                {
                    "prompt": _prompt(r),
                    "completion": answer,
                    "label": r["label"],
                    "episode": r["episode"],
                    "t": r["t"],
                    "action": r["action"],
                    "note": r.get("note", ""),
                }
            )
    return out


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    r"""Mann-Whitney AUC: :math:`P(s^+ > s^-) + \tfrac12 P(s^+ = s^-)` over all pairs,
    computed from ranks in :math:`O(n \log n)`: with :math:`R_+` the sum of the positives'
    ranks among all :math:`n = n_+ + n_-` scores (tied scores share their mean rank),
    :math:`\mathrm{AUC} = (R_+ - n_+(n_+ + 1)/2) / (n_+ n_-)`.  Every rank is a multiple of
    1/2 below :math:`n \le 2^{52}`, so the sums are exact in float64 and the result equals
    the pair count's to the last bit of the final division."""
    ys = [bool(y) for y in labels]
    if len(ys) != len(scores):
        raise InvalidArgumentError(
            f"scores and labels: {len(scores)} scores for {len(ys)} labels; give one label each"
        )
    n_pos = sum(ys)
    n_neg = len(ys) - n_pos
    if not n_pos or not n_neg:
        raise InvalidArgumentError(
            f"AUC needs both classes; got {n_pos} positives and {n_neg} negatives"
        )
    rank_sum, below = 0.0, 0
    for _, tied in groupby(sorted(zip(scores, ys, strict=True), key=itemgetter(0)), itemgetter(0)):
        flags = [y for _, y in tied]
        rank_sum += (below + (len(flags) + 1) / 2) * sum(flags)  # mean of ranks below+1..+m
        below += len(flags)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@dataclass
class CriticScore:
    """AUC over ``n`` held-out actions (``positives`` of them labelled 1) of ``states`` states,
    with a 95 % bootstrap interval over states, and the mean score of each class."""

    n: int
    positives: int
    states: int
    auc: float
    auc_ci: tuple[float, float]
    mean_positive: float
    mean_negative: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_actions(
    lm: LanguageModel, examples: Sequence[dict[str, Any]], batch: int = 4
) -> list[float]:
    """The expected critique score of each example's action under ``lm`` (module docstring)."""
    values = [json.dumps(v) for v in SCORES]
    out = []
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        prompts = [ex["prompt"] for ex in chunk for _ in values]
        conts = [v for _ in chunk for v in values]
        logp = lm.logprob(prompts, conts, add_eos=False, assistant_prefix=PREFIX)
        for k in range(len(chunk)):
            row = [float(x) for x in logp[k * len(values) : (k + 1) * len(values)]]
            top = max(row)
            w = [math.exp(x - top) for x in row]
            out.append(sum(v * p for v, p in zip(SCORES, w, strict=True)) / sum(w))
    return out


def evaluate_critic(
    lm: LanguageModel, examples: Sequence[dict[str, Any]], resamples: int = 2000, seed: int = 0
) -> tuple[CriticScore, list[float]]:
    """AUC of ``lm``'s expected critique score on labelled ``examples`` (and the scores)."""
    t0 = time.perf_counter()
    scores = score_actions(lm, examples)
    return summarise_scores(scores, examples, resamples, seed, time.perf_counter() - t0), scores


def summarise_scores(
    scores: Sequence[float],
    examples: Sequence[dict[str, Any]],
    resamples: int = 2000,
    seed: int = 0,
    seconds: float = 0.0,
) -> CriticScore:
    """The :class:`CriticScore` of any ``scores`` of labelled ``examples`` (one per example, higher
    = more likely the gold action): the AUC and its bootstrap interval over states, so that a
    trained critic, the prompted one and a rule are compared on the same footing."""
    if len(scores) != len(examples):
        raise InvalidArgumentError(
            f"scores: {len(scores)} scores for {len(examples)} examples; give one per example"
        )
    labels = [int(ex["label"]) for ex in examples]
    (lo, hi), n_states = _state_bootstrap(
        examples, lambda idx, ys: auc([scores[j] for j in idx], ys), resamples, seed, (0.0, 1.0)
    )
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    return CriticScore(
        len(examples),
        len(pos),
        n_states,
        auc(scores, labels),
        (lo, hi),
        sum(pos) / len(pos),
        sum(neg) / len(neg),
        seconds,
    )


def auc_difference(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    examples: Sequence[dict[str, Any]],
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, tuple[float, float]]:
    """AUC(a) - AUC(b) of two critics' scores of the same labelled ``examples``, with a 95 %
    *paired* bootstrap interval: each resample draws states with replacement and scores both
    critics on the same draw, so the interval is that of the difference, not of two independent
    AUCs (it excludes 0 when one critic ranks better on these states)."""
    if not len(scores_a) == len(scores_b) == len(examples):
        raise InvalidArgumentError(
            f"scores: {len(scores_a)} and {len(scores_b)} scores for {len(examples)} examples; "
            "give both critics' scores of the same examples"
        )
    check_int(resamples, "resamples", minimum=1)
    labels = [int(ex["label"]) for ex in examples]

    def difference(idx: list[int], ys: list[int]) -> float:
        return auc([scores_a[j] for j in idx], ys) - auc([scores_b[j] for j in idx], ys)

    ci, _ = _state_bootstrap(examples, difference, resamples, seed, (-1.0, 1.0))
    return auc(scores_a, labels) - auc(scores_b, labels), ci


def _state_bootstrap(
    examples: Sequence[dict[str, Any]],
    statistic: Any,
    resamples: int,
    seed: int,
    empty: tuple[float, float],
) -> tuple[tuple[float, float], int]:
    """The 95 % percentile interval of ``statistic(idx, labels)`` over ``resamples`` draws of
    the examples' states with replacement (a state's actions move together; draws with one
    class only are skipped), and the number of states; ``empty`` when no draw has both
    classes."""
    labels = [int(ex["label"]) for ex in examples]
    states: dict[tuple[str, int], list[int]] = {}
    for j, ex in enumerate(examples):
        states.setdefault((ex["episode"], ex["t"]), []).append(j)
    keys = list(states)
    rng, values = random.Random(seed), []
    for _ in range(resamples):
        idx = [j for k in rng.choices(keys, k=len(keys)) for j in states[k]]
        ys = [labels[j] for j in idx]
        if 0 < sum(ys) < len(ys):
            values.append(statistic(idx, ys))
    values.sort()
    if not values:
        return empty, len(keys)
    return (values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]), len(
        keys
    )


def _read(shards: Sequence[str | Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from smcplan.train.data import read_shard

    transitions, headers = [], []
    for shard in shards:
        read = read_shard(shard)
        if read.header.get("source") not in (None, "gold"):
            raise InvalidArgumentError(
                f"{shard}: the critic's labels need a gold shard (collect --source gold), not "
                f"source={read.header.get('source')!r}"
            )
        transitions += read.transitions
        headers.append({"path": str(shard), **read.header})
    return transitions, headers


def train_critic(
    shards: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    settings: Any = None,
    lora: Any = "default",
    negatives_per_state: int | None = 2,
    max_examples: int | None = None,
    resume: bool = False,
    seed: int = 0,
    map_notes: bool = False,
) -> dict[str, Any]:
    """Label, build examples and fine-tune the critic (module docstring); ``map_notes``: each
    prompt carries its action's map note (:mod:`smcplan.agents.map_notes`; run the RLAW agent
    with ``critic_notes=True``, which the manifest's ``map_notes`` says); writes
    ``<out>/examples.jsonl``, ``<out>/adapter`` (load it with ``agents.make("rlaw", ...,
    critic_path=<out>/adapter)``) and ``<out>/train.json``."""
    from smcplan.llm.finetune import LoraSettings, SFTSettings, sft_dataset, train_sft

    transitions, headers = _read(shards)
    maps = _maps(transitions, headers) if map_notes else None
    examples = critic_examples(critic_labels(transitions, maps), negatives_per_state, seed)
    examples, out = subsample_and_save(examples, max_examples, seed, out)
    settings = settings or SFTSettings(
        learning_rate=2e-4,
        scheduler="cosine_with_min_lr",
        min_lr=1e-5,
        weight_decay=0.01,
        epochs=3.0,
        batch_size=4,
        grad_accum=16,
        seed=seed,
    )
    lora = LoraSettings(r=16, alpha=32) if lora == "default" else lora
    result = train_sft(model, sft_dataset(examples), out, settings, lora=lora, resume=resume)
    positives = sum(ex["label"] for ex in examples)
    return write_sft_manifest(
        out, "critic", model, result, examples, headers, positives=positives, map_notes=map_notes
    )


def _maps(transitions: list[dict[str, Any]], headers: list[dict[str, Any]]) -> dict:
    """The place maps of every state of ``transitions`` (their episodes' own steps), read with
    the rules of the shards' environment."""
    from smcplan.agents.map_notes import episode_maps

    envs = {str(h.get("env") or "auto") for h in headers}
    return episode_maps(transitions, envs.pop() if len(envs) == 1 else "auto")


def run(request: Any) -> dict[str, Any]:
    """``smcplan train critic``: the registry entry; ``--opt`` keys ``negatives_per_state``,
    ``max_examples``, ``lora_r``, ``lora_alpha``, ``max_length``, ``grad_accum`` (default 16:
    with ``--batch-size 4`` the paper's effective batch 64), ``threads``, ``warmup_steps``,
    ``map_notes`` (true: the prompts carry the map notes), ``adam_beta2`` (AdamW's, default
    0.999: :class:`~smcplan.llm.finetune.SFTSettings`)."""
    from smcplan.llm.finetune import LoraSettings, SFTSettings
    from smcplan.train.options import trainer_options

    opts = trainer_options("critic", request.options)  # typed: map_notes=no is False
    if not request.data:
        raise InvalidArgumentError(
            "critic needs --data SHARD (a gold shard: collect --source gold)"
        )
    lr = request.learning_rate or 2e-4
    settings = SFTSettings(
        learning_rate=lr,
        scheduler="cosine_with_min_lr",
        min_lr=min(1e-5, lr),  # RLAW's cosine to 1e-5
        weight_decay=0.01,
        adam_beta2=opts.get("adam_beta2", 0.999),
        epochs=request.epochs or 3.0,
        max_steps=request.max_steps,
        batch_size=request.batch_size or 4,
        grad_accum=opts.get("grad_accum", 16),
        save_steps=request.save_steps or 50,
        seed=request.seed,
        progress=request.progress,
        max_length=opts.get("max_length", 768),
        warmup_steps=opts.get("warmup_steps", 0),
        threads=opts.get("threads"),
    )
    lora = LoraSettings(r=opts.get("lora_r", 16), alpha=opts.get("lora_alpha", 32))
    return train_critic(
        request.data,
        request.out,
        model=request.model,
        settings=settings,
        lora=lora,
        negatives_per_state=opts.get("negatives_per_state", 2),
        max_examples=opts.get("max_examples"),
        resume=request.resume,
        seed=request.seed,
        map_notes=opts.get("map_notes", False),
    )
