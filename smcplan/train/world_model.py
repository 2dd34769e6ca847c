r"""The learned world model: SFT of a language model on (context, action) → next observation.

Each real transition of a shard (:mod:`smcplan.train.collect`) becomes examples in exactly the
prompt the planner's LM world model sends (:class:`smcplan.llm.ObservationModel` on
:meth:`smcplan.planning.text_particle.TextParticle.context`): the task, the retrieved facts,
the observation at the particle's root and the imagined steps since, then the action.  Depth
``d`` puts the root ``d`` real steps back and shows those ``d`` real steps as the "imagined"
ones, so the model is trained on the contexts a particle has at every planning depth
``d < H``.  The completion is the environment's next observation (whitespace collapsed) or,
with ``targets=("observation", "reward", "done")``, the outcome line (the score change and
whether the episode was won or lost) then the observation, in one generation
(:mod:`smcplan.llm.roles.world_outcome`); the targets are written to
``<out>/adapter/world_model.json`` so the planner and ``smcplan train evaluate`` read the model's
replies the way it was trained.  Scoring on held-out seeds (exact match, token F1, event match,
and the reward and done events' precision and recall): :mod:`smcplan.train.world_model_eval`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError, check_float, check_int
from smcplan.jsonfile import write_json
from smcplan.llm.roles.world_outcome import (
    DEFAULT_TARGETS,
    TARGETS_FILE,
    check_targets,
    ending_of,
    format_completion,
)
from smcplan.planning.text_particle import OBS_CHARS, first_sentence, render_context
from smcplan.train.data import read_shard, subsample_and_save, write_sft_manifest
from smcplan.train.world_model_eval import (
    WorldModelScore,
    evaluate_world_model,
    exact_match,
    observation_event,
    token_f1,
)

__all__ = [
    "OBS_CHARS",
    "context_text",
    "world_model_examples",
    "heldout_examples",
    "TARGETS",
    "first_sentence",
    "mix_examples",
    "write_targets",
    "token_f1",
    "exact_match",
    "observation_event",
    "WorldModelScore",
    "evaluate_world_model",
    "train_world_model",
]


def context_text(
    task: str,
    facts: Sequence[Sequence[str]],
    root_observation: str,
    steps: Sequence[tuple[str, str]] = (),
) -> str:
    """The particle context of the text planner (``TextParticle.context``), from plain data:
    :func:`smcplan.planning.text_particle.render_context` at :data:`OBS_CHARS`."""
    return render_context(task, facts, root_observation, steps, OBS_CHARS)


#: what a world model is trained to write: ``"full"``, the whole next observation; ``"head"``,
#: its first sentence (:func:`first_sentence`)
TARGETS = ("full", "head")

def world_model_examples(
    transitions: Iterable[dict[str, Any]],
    depths: Sequence[int] = (0,),
    branches: Iterable[dict[str, Any]] = (),
    target: str = "full",
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> list[dict[str, Any]]:
    """SFT examples ``{"prompt": messages, "completion": next observation, "episode", "t",
    "depth", "branch", "action", "reward", "ending", "targets"}`` from shard transitions (one
    per transition and depth ``d`` with ``t >= d``) and counterfactual ``branches``
    (:mod:`smcplan.train.collect`): a branch at step ``t`` has the context of the real path up
    to ``t`` (root ``d`` real steps back) and the branch's own action and next observation.
    ``target`` (:data:`TARGETS`): the completion is the whole next observation (``"full"``)
    or its :func:`first_sentence` (``"head"``); the context always has the real observations
    (clipped as the planner clips them).  ``targets``
    (:data:`~smcplan.llm.roles.world_outcome.TARGET_FIELDS`): with ``"reward"`` / ``"done"``
    the completion starts with the outcome line of the step's score change and ending
    (:func:`~smcplan.llm.roles.world_outcome.format_completion`; a step cut by the step limit
    is not an ending)."""
    from smcplan.llm.templates import load_role

    if target not in TARGETS:
        raise InvalidArgumentError(
            f"target must be one of {', '.join(TARGETS)}; got {target!r}. "
            "Use 'head' to train on the first sentence of each next observation."
        )
    targets = check_targets(targets)
    clip = first_sentence if target == "head" else (lambda text: " ".join(text.split()))

    def complete(step: dict[str, Any]) -> tuple[str, float, str]:
        ending = ending_of(
            bool(step.get("done")), bool(step.get("won")), bool(step.get("truncated"))
        )
        reward = float(step.get("reward", 0.0))
        text = format_completion(clip(step["next_observation"]), reward, ending, targets)
        return text, reward, ending

    role = load_role("observation")
    by_episode: dict[str, list[dict[str, Any]]] = {}
    for tr in transitions:
        by_episode.setdefault(tr["episode"], []).append(tr)
    branched: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for br in branches:
        branched.setdefault((br["episode"], br["t"]), []).append(br)
    out = []
    for episode, rows in by_episode.items():
        rows = sorted(rows, key=lambda r: r["t"])
        for i, tr in enumerate(rows):
            for d in depths:
                if d > i:
                    continue
                root = rows[i - d]
                steps = [(r["action"], r["next_observation"]) for r in rows[i - d : i]]
                context = context_text(root["task"], root["facts"], root["observation"], steps)
                for step, is_branch in [(tr, False)] + [
                    (br, True) for br in branched.get((episode, tr["t"]), [])
                ]:
                    completion, reward, ending = complete(step)
                    out.append(
                        {
                            "prompt": role.messages(context=context, action=step["action"]),
                            "completion": completion,
                            "episode": episode,
                            "t": tr["t"],
                            "depth": d,
                            "branch": is_branch,
                            "action": step["action"],
                            "reward": reward,
                            "ending": ending,
                            "targets": list(targets),
                        }
                    )
    return out


def heldout_examples(
    shards: Sequence[str | Path],
    depths: Sequence[int] = (0,),
    branches: bool = False,
    target: str = "full",
    sample: int | None = None,
    seed: int = 0,
    limit: int | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> list[dict[str, Any]]:
    """The examples ``smcplan train evaluate`` scores: :func:`world_model_examples` of the
    ``shards`` (with their branches when ``branches``), then ``sample`` of them drawn without
    replacement with ``random.Random(seed)`` (kept in shard order), then the first ``limit``."""
    read = [read_shard(path) for path in shards]
    examples = world_model_examples(
        [t for s in read for t in s.transitions],
        depths,
        [b for s in read for b in s.branches] if branches else (),
        target,
        targets,
    )
    if sample is not None and sample < len(examples):
        picked = sorted(random.Random(seed).sample(range(len(examples)), sample))
        examples = [examples[i] for i in picked]
    return examples[:limit]


def mix_examples(
    examples: Sequence[dict[str, Any]],
    max_examples: int | None,
    real_share: float | None,
    seed: int,
) -> list[dict[str, Any]]:
    """``max_examples`` examples of which ``round(real_share * max_examples)`` are real steps
    (``branch`` false) and the rest branches, each part a seeded uniform draw without
    replacement; the rest of the budget falls to the other part when one is short.  With
    ``real_share=None`` the examples are returned as they are (the caller's uniform draw over
    all of them keeps the shard's own mix: about 1 real step in 8 with ``--branches all`` on
    twx:coin).  The result is shuffled with the same seed."""
    return _mix(examples, max_examples, real_share, "real_share", _is_real, seed)


def _is_real(example: dict[str, Any]) -> bool:
    return not example.get("branch")


def _mix(
    examples: Sequence[dict[str, Any]],
    max_examples: int | None,
    share: float | None,
    name: str,
    chosen: Any,
    seed: int,
) -> list[dict[str, Any]]:
    """The examples as they are (``share=None``), else :func:`_draw_share` after checking the
    option ``name`` (a share in [0, 1]) and that ``max_examples`` sizes the mix."""
    if share is None:
        return list(examples)
    share = check_float(share, name, minimum=0.0, maximum=1.0)
    if max_examples is None:
        raise InvalidArgumentError(
            f"{name} needs max_examples (the size of the mix); got max_examples=None. "
            f"Pass --opt max_examples=N with --opt {name}."
        )
    return _draw_share(examples, chosen, max_examples, share, seed)


def _draw_share(
    examples: Sequence[dict[str, Any]], chosen: Any, max_examples: int, share: float, seed: int
) -> list[dict[str, Any]]:
    """``max_examples`` of ``examples`` (at most all), ``round(share * total)`` of them where
    ``chosen(ex)`` and the rest where not, each part a seeded uniform draw without replacement
    (a short part leaves its room to the other), shuffled with the same seed."""
    total = min(check_int(max_examples, "max_examples", minimum=1), len(examples))
    yes = [ex for ex in examples if chosen(ex)]
    no = [ex for ex in examples if not chosen(ex)]
    n_yes = min(len(yes), round(share * total))
    n_no = min(len(no), total - n_yes)
    n_yes = min(len(yes), total - n_no)
    rng = random.Random(seed)
    mixed = rng.sample(yes, n_yes) + rng.sample(no, n_no)
    rng.shuffle(mixed)
    return mixed


def has_outcome(example: dict[str, Any]) -> bool:
    """True for an example whose step changed the score or ended the episode (won or lost)."""
    return float(example.get("reward", 0.0)) != 0.0 or example.get("ending", "no") != "no"


def mix_outcomes(
    examples: Sequence[dict[str, Any]],
    max_examples: int | None,
    outcome_share: float | None,
    seed: int,
) -> list[dict[str, Any]]:
    """``max_examples`` examples of which ``round(outcome_share * max_examples)`` have an
    outcome (:func:`has_outcome`) and the rest none, each part a seeded uniform draw without
    replacement (a short part leaves its room to the other), shuffled with the same seed.
    Why: rewards and endings are rare (one step an episode at most), so a uniform draw of a few
    hundred examples holds a handful and the model learns to write "Reward: 0 | Done: no"
    always; ``None`` returns the examples as they are."""
    return _mix(examples, max_examples, outcome_share, "outcome_share", has_outcome, seed)


def write_targets(folder: str | Path, targets: Sequence[str]) -> Path:
    """``folder/world_model.json`` = ``{"targets": [...]}``: what the model in ``folder``
    writes (:func:`~smcplan.llm.roles.world_outcome.read_targets` reads it back)."""
    path = Path(folder) / TARGETS_FILE
    write_json(path, {"targets": list(check_targets(targets))})
    return path


def train_world_model(
    shards: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    settings: Any = None,
    lora: Any = "default",
    depths: Sequence[int] = (0, 1),
    max_examples: int | None = None,
    resume: bool = False,
    seed: int = 0,
    init_adapter: str | Path | None = None,
    real_share: float | None = None,
    outcome_share: float | None = None,
    target: str = "full",
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> dict[str, Any]:
    """Build examples from ``shards`` (their transitions and branches), fine-tune ``model``
    (default SmolLM2) with :func:`smcplan.llm.finetune.train_sft`, and write
    ``<out>/train.json`` (what was trained, on what, how long).  ``lora``: ``"default"`` (r=16,
    alpha=32), a :class:`~smcplan.llm.finetune.LoraSettings`, or ``None`` (full fine-tune);
    ``init_adapter``: continue an earlier run's adapter (``DIR/adapter``) on these examples;
    ``real_share``: the fraction of the ``max_examples`` drawn from real steps
    (:func:`mix_examples`; ``None``: a uniform draw over all examples); ``target``: ``"full"``
    or ``"head"``; ``targets``: what the model learns to write (:func:`world_model_examples`;
    recorded in the adapter folder by :func:`write_targets`); ``outcome_share``: the fraction
    drawn from steps with a reward or an ending (:func:`mix_outcomes`; not with
    ``real_share``)."""

    from smcplan.llm.finetune import LoraSettings, SFTSettings, sft_dataset, train_sft

    transitions, branches, headers = [], [], []
    for shard in shards:
        read = read_shard(shard)
        transitions += read.transitions
        branches += read.branches
        headers.append({"path": str(shard), **read.header})
    targets = check_targets(targets)
    examples = world_model_examples(transitions, depths, branches, target, targets)
    if real_share is not None and outcome_share is not None:
        raise InvalidArgumentError(
            f"real_share={real_share!r} and outcome_share={outcome_share!r}: give one of them "
            "(each draws the whole max_examples mix)"
        )
    examples = mix_examples(examples, max_examples, real_share, seed)
    examples = mix_outcomes(examples, max_examples, outcome_share, seed)
    examples, out = subsample_and_save(examples, max_examples, seed, out)
    lora = LoraSettings() if lora == "default" else lora
    result = train_sft(
        model,
        sft_dataset(examples),
        out,
        settings or SFTSettings(seed=seed),
        lora=lora,
        resume=resume,
        init_adapter=init_adapter,
    )
    write_targets(result.weights, targets)
    return write_sft_manifest(
        out, "world-model", model, result, examples, headers,
        transitions=len(transitions), branches=len(branches), depths=list(depths),
        real_share=real_share, target=target, targets=list(targets),
        real_examples=sum(not ex.get("branch") for ex in examples),
        outcome_share=outcome_share, outcome_examples=sum(has_outcome(ex) for ex in examples),
    )  # fmt: skip


def run(request: Any) -> dict[str, Any]:
    """``smcplan train world-model``: the registry entry (:class:`~smcplan.train.registry.
    TrainRequest`; options ``depths`` (list of ints, default [0, 1]), ``max_examples``,
    ``full`` (true: full fine-tune instead of LoRA), ``lora_r``, ``lora_alpha``,
    ``max_length``, ``grad_accum``, ``scheduler``, ``threads``, ``warmup_steps``,
    ``init_adapter`` (an adapter folder to continue), ``real_share`` (the fraction of
    ``max_examples`` drawn from real steps, the rest branches), ``outcome_share`` (the
    fraction drawn from steps with a reward or an ending), ``target`` (``full`` or
    ``head``: the whole next observation or its first sentence), ``targets`` (a list such as
    ``["observation","reward","done"]``, default ``["observation"]``))."""
    from smcplan.llm.finetune import LoraSettings, SFTSettings
    from smcplan.train.options import trainer_options

    opts = trainer_options("world-model", request.options)  # typed: full=no is False
    if not request.data:
        raise InvalidArgumentError(
            "world-model needs --data SHARD (a shard from `smcplan train collect`)"
        )
    base = SFTSettings()
    settings = SFTSettings(
        learning_rate=request.learning_rate or base.learning_rate,
        epochs=request.epochs or base.epochs,
        max_steps=request.max_steps,
        batch_size=request.batch_size or base.batch_size,
        save_steps=request.save_steps or base.save_steps,
        seed=request.seed,
        progress=request.progress,
        max_length=opts.get("max_length", base.max_length),
        grad_accum=opts.get("grad_accum", base.grad_accum),
        scheduler=opts.get("scheduler", base.scheduler),
        warmup_steps=opts.get("warmup_steps", base.warmup_steps),
        threads=opts.get("threads"),
    )
    lora = (
        None
        if opts.get("full")
        else LoraSettings(r=opts.get("lora_r", 16), alpha=opts.get("lora_alpha", 32))
    )
    depths = opts.get("depths", [0, 1])
    if not isinstance(depths, list) or not all(isinstance(d, int) and d >= 0 for d in depths):
        raise InvalidArgumentError(f"depths must be a list of integers >= 0; got {depths!r}")
    return train_world_model(
        request.data,
        request.out,
        model=request.model,
        settings=settings,
        lora=lora,
        depths=depths,
        max_examples=opts.get("max_examples"),
        resume=request.resume,
        seed=request.seed,
        init_adapter=opts.get("init_adapter"),
        real_share=opts.get("real_share"),
        outcome_share=opts.get("outcome_share"),
        target=opts.get("target", "full"),
        targets=opts.get("targets", DEFAULT_TARGETS),
    )
