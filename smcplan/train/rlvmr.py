r"""RLVMR cold start: successful trajectories annotated with meta-reasoning tags, then SFT.

RLVMR (arXiv 2507.22844) starts its policy with supervised fine-tuning on successful
trajectories whose every step is written in its format (one of ``<planning>``, ``<explore>``,
``<reflection>``, ``<monitor>`` with one sentence, then ``<action>``; :func:`smcplan.agents.
rlvmr_rewards.format_response`), lr 1e-5 for 5 epochs.  The paper has a strong model write the
tags; here they are **derived from the trajectory's structure** (gold paths or the oracle
planner's episodes, :mod:`smcplan.train.collect`), by these rules, first match wins:

1. ``planning`` at the first step (the plan restates the task's goal and the search strategy);
2. ``reflection`` when the previous step's action was not understood (its observation starts
   with a benchmark's "not understood" text, :data:`~smcplan.agents.rlvmr_rewards.
   INVALID_FEEDBACK`) and the action changed;
3. ``monitor`` when the step makes progress (the score rises or the episode is won): the plan's
   next step is carried out;
4. ``explore`` when the action was never taken before in the episode (a new place or object);
5. ``monitor`` otherwise (a known move, e.g. walking back to reach an unexplored door).

So every annotated step earns a non-negative process reward under the verifiable rules (planning
1 on a success, explore 1 on a new action, reflection 1 after a failure; monitor 0): the cold
start teaches the format and the modes the GRPO-MR stage then rewards.  The prompt of each
example is exactly the one the :class:`~smcplan.agents.rlvmr.RLVMRAgent` builds at that step
(the agent's own context, plan and admissible list, replayed with the annotated answers), so the
trained adapter plugs into ``smcplan.agents.make("rlvmr", lm=load_model(adapter=...))``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smcplan.agents.llm_agent import Decision
from smcplan.agents.rlvmr import RLVMRAgent
from smcplan.agents.rlvmr_rewards import TaggedStep, format_response, looks_invalid
from smcplan.errors import InvalidArgumentError
from smcplan.train.data import subsample_and_save, write_sft_manifest

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["annotate", "annotated_wins", "cold_start_examples", "train_cold_start", "run"]


def _goal(task: str) -> str:
    text = " ".join(task.split())
    for lead in ("Your task is to ", "your task is to "):
        if lead in text:
            text = text.split(lead, 1)[1]
    return text.rstrip(". ") or "finish the task"


def annotate(
    task: str, actions: Sequence[str], observations: Sequence[str], scores: Sequence[float]
) -> list[tuple[str, str]]:
    """``(tag, sentence)`` for each step of one successful trajectory (module docstring rules).

    ``observations[t]`` is the observation *after* action ``t``; ``scores[t]`` the score after it
    (the score before step 0 is taken as 0).
    """
    n = len(actions)
    if len(observations) != n or len(scores) != n:
        raise InvalidArgumentError(
            f"annotate needs one observation and score per action; got {n} actions, "
            f"{len(observations)} observations, {len(scores)} scores"
        )
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for t, action in enumerate(actions):
        gained = scores[t] > (scores[t - 1] if t else 0.0) or t == n - 1
        if t == 0:
            out.append(
                (
                    "planning",
                    f"Goal: {_goal(task)}. I will explore new places until I find "
                    "what the task needs, then act on it.",
                )
            )
        elif looks_invalid(observations[t - 1]) and actions[t - 1] != action:
            out.append(("reflection", f"'{actions[t - 1]}' did not work, so I try '{action}'."))
        elif gained:
            out.append(("monitor", f"This is the next step of the plan: {action}."))
        elif action not in seen:
            out.append(("explore", f"I have not tried '{action}' yet; it may reveal more."))
        else:
            out.append(("monitor", f"I go back the known way ({action}) to reach new places."))
        seen.add(action)
    return out


class _Replay(RLVMRAgent):
    """The RLVMR agent with its answers given: collects the prompt it would have sent."""

    name = "rlvmr-replay"

    def __init__(
        self, lm: LanguageModel, script: Sequence[tuple[str, str, str]], **config: Any
    ) -> None:
        super().__init__(lm, **config)
        self.script = list(script)
        self.examples: list[dict[str, Any]] = []

    def decide(self, observation, admissible, info, rec) -> Decision:  # type: ignore[override]
        if self.trajectory:
            prev = self.trajectory[-1]
            self.trajectory[-1] = TaggedStep(
                prev.tag, prev.action, True, not bool(info.get("invalid", False))
            )
        ctx = self.context(observation)
        prompt = self.assets.messages(
            task=self.task, context=ctx.situation(), plan=self.plan, admissible=admissible
        )
        tag, content, action = self.script[len(self.trajectory)]
        if action not in admissible:
            admissible.append(action)  # an old shard without admissible lists
        self.examples.append(
            {"prompt": prompt, "completion": format_response(tag, content, action), "tag": tag}
        )
        self.trajectory.append(TaggedStep(tag, action, True, True))
        if tag == "planning":
            self.plan = content
        return Decision(action, content, tag)


def annotated_wins(
    transitions: Iterable[dict[str, Any]],
) -> Iterator[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]]:
    """``(episode, rows, tags)`` for every *won* episode among shard ``transitions``: its
    steps in order and the :func:`annotate` tag of each (what every cold start learns from)."""
    by_episode: dict[str, list[dict[str, Any]]] = {}
    for tr in transitions:
        by_episode.setdefault(str(tr["episode"]), []).append(tr)
    for episode, rows in by_episode.items():
        rows = sorted(rows, key=lambda r: r["t"])
        if not rows or not rows[-1].get("won"):
            continue
        tags = annotate(
            rows[0]["task"],
            [r["action"] for r in rows],
            [r["next_observation"] for r in rows],
            [float(r.get("score", 0.0) or 0.0) for r in rows],
        )
        yield episode, rows, tags


def cold_start_examples(
    transitions: Iterable[dict[str, Any]], lm: LanguageModel
) -> list[dict[str, Any]]:
    """SFT examples ``{"prompt", "completion", "tag", "episode", "t"}`` from the *won* episodes
    among shard ``transitions`` (:func:`annotate`, prompts replayed through the agent on ``lm``,
    whose tokenizer and window size the agent's context budget uses)."""
    out: list[dict[str, Any]] = []
    for episode, rows, tags in annotated_wins(transitions):
        actions = [r["action"] for r in rows]
        agent = _Replay(lm, [(g, z, a) for (g, z), a in zip(tags, actions, strict=True)])
        agent.reset(rows[0]["task"], rows[0]["observation"], list(rows[0].get("admissible", [])))
        for r in rows:
            info = {"invalid": looks_invalid(r["observation"]) if r["t"] else False}
            agent.act(r["observation"], list(r.get("admissible") or [r["action"]]), info)
        for t, ex in enumerate(agent.examples):
            out.append({**ex, "episode": episode, "t": t})
    return out


def train_cold_start(
    shards: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    settings: Any = None,
    lora: Any = "default",
    max_examples: int | None = None,
    resume: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """Cold-start SFT (TRL ``SFTTrainer`` through :func:`smcplan.llm.finetune.train_sft`) on the
    tagged successful episodes of ``shards``; defaults lr 1e-5, 5 epochs (the paper's), LoRA
    r = 16.  Writes ``<out>/examples.jsonl``, ``<out>/adapter`` and ``<out>/train.json``."""

    from smcplan.llm import load_model
    from smcplan.llm.finetune import LoraSettings, SFTSettings, sft_dataset, train_sft
    from smcplan.train.data import read_shard

    transitions, headers = [], []
    for shard in shards:
        read = read_shard(shard)
        transitions += read.transitions
        headers.append({"path": str(shard), **read.header})
    lm = load_model(model, threads=1)
    examples = cold_start_examples(transitions, lm)
    del lm
    if not examples:
        raise InvalidArgumentError("no won episode in the shards: the cold start needs successes")
    examples, out = subsample_and_save(examples, max_examples, seed, out)
    lora = LoraSettings() if lora == "default" else lora
    t0 = time.perf_counter()
    result = train_sft(
        model,
        sft_dataset(examples),
        out,
        settings or SFTSettings(learning_rate=1e-5, epochs=5, seed=seed),
        lora=lora,
        resume=resume,
    )
    tags: dict[str, int] = {}
    for ex in examples:
        tags[ex["tag"]] = tags.get(ex["tag"], 0) + 1
    return write_sft_manifest(
        out, "cold-start", model, result, examples, headers,
        tags=tags, wall_seconds=time.perf_counter() - t0,
    )  # fmt: skip


def run(request: Any) -> dict[str, Any]:
    """``smcplan train cold-start``: the registry entry; ``--opt`` keys ``max_examples``,
    ``lora_r``, ``lora_alpha``, ``max_length``, ``grad_accum``, ``threads``."""
    from smcplan.llm.finetune import LoraSettings, SFTSettings
    from smcplan.train.options import trainer_options

    opts = trainer_options("cold-start", request.options)
    if not request.data:
        raise InvalidArgumentError("cold-start needs --data SHARD (gold or oracle episodes)")
    base = SFTSettings()
    settings = SFTSettings(
        learning_rate=request.learning_rate or 1e-5,
        epochs=request.epochs or 5.0,
        max_steps=request.max_steps,
        batch_size=request.batch_size or base.batch_size,
        save_steps=request.save_steps or base.save_steps,
        seed=request.seed,
        progress=request.progress,
        max_length=opts.get("max_length", 768),
        grad_accum=opts.get("grad_accum", base.grad_accum),
        threads=opts.get("threads"),
    )
    lora = LoraSettings(r=opts.get("lora_r", 16), alpha=opts.get("lora_alpha", 32))
    return train_cold_start(
        request.data,
        request.out,
        model=request.model,
        settings=settings,
        lora=lora,
        max_examples=opts.get("max_examples"),
        resume=request.resume,
        seed=request.seed,
    )
