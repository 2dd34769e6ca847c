r"""Supervised fine-tuning with TRL's ``SFTTrainer``: LoRA (PEFT) or full, checkpoints, resume.

The loss is the mean negative log-likelihood of the completion tokens given the prompt,

    L(θ) = − (1 / Σ_i |y_i|) Σ_i Σ_t log p_θ(y_{i,t} | x_i, y_{i,<t}),

over prompt/completion examples in TRL's conversational form (``prompt``: chat messages,
``completion``: one assistant message), rendered with the tokenizer's chat template: the same
text :class:`smcplan.llm.LanguageModel` scores and samples, so a trained role sees at run time
exactly the prompt it was trained on.  Prompt tokens are masked out (``completion_only_loss``).

Checkpoints go to ``<out>/checkpoints/checkpoint-<step>`` every ``save_steps`` optimizer steps
(weights, optimizer, scheduler and RNG states: transformers' ``Trainer``); ``resume=True`` starts
from the last one, so a run killed by Ctrl-C or SIGKILL and resumed ends with the same weights as
an uninterrupted run with the same seed (tested).  The final weights go to ``<out>/adapter``
(LoRA) or ``<out>/model`` (full fine-tune), with the tokenizer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smcplan.errors import InvalidArgumentError, check_float, check_int
from smcplan.llm.finetune.lora import FinetuneError, LoraSettings, lora_config, require

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

__all__ = [
    "SFTSettings",
    "SFTResult",
    "train_sft",
    "sft_dataset",
    "completion_loss",
    "last_checkpoint",
]


@dataclass(frozen=True)
class SFTSettings:
    """Optimisation settings (AdamW): ``learning_rate`` with a ``scheduler`` (``"cosine"``,
    ``"cosine_with_min_lr"``, ``"linear"``, ``"constant"``) after ``warmup_steps``, ``min_lr``
    (the floor of ``"cosine_with_min_lr"``: lr_t = min_lr + (lr - min_lr)(1 + cos(pi t/T))/2),
    ``weight_decay``; ``adam_beta2``, the decay of AdamW's second-moment estimate (0.999, the
    transformers default, averages the squared gradients of about the last 1/(1 - beta2) = 1000
    steps; 0.99 about 100); ``epochs`` or, when set, ``max_steps`` optimizer steps;
    ``batch_size`` × ``grad_accum`` examples per step;
    ``max_length`` tokens per example (longer ones are cut); ``save_steps`` between checkpoints;
    ``seed`` (weights init of the adapter, data order, dropout); ``threads`` (CPU); ``bf16``
    (``None``: bfloat16 autocast on a CUDA device that supports it, float32 otherwise: TRL's
    default turns bf16 on even on CPU, where it is emulated and slow); ``gradient_checkpointing``
    (recompute activations in the backward pass: less memory, ~1/3 more compute; TRL's default is
    on, smcplan's off)."""

    learning_rate: float = 2e-4
    scheduler: str = "cosine"
    min_lr: float | None = None
    warmup_steps: int = 0
    weight_decay: float = 0.01
    adam_beta2: float = 0.999
    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 4
    grad_accum: int = 1
    max_length: int = 512
    save_steps: int = 50
    save_total_limit: int = 2
    seed: int = 0
    threads: int | None = None
    progress: bool = True
    bf16: bool | None = None
    gradient_checkpointing: bool = False

    def validated(self) -> SFTSettings:
        check_float(self.learning_rate, "learning_rate", minimum=0.0, min_inclusive=False)
        check_float(self.epochs, "epochs", minimum=0.0, min_inclusive=False)
        check_float(self.weight_decay, "weight_decay", minimum=0.0)
        check_float(self.adam_beta2, "adam_beta2", minimum=0.0, maximum=1.0, max_inclusive=False)
        if self.max_steps is not None:
            check_int(self.max_steps, "max_steps", minimum=1)
        for name in ("batch_size", "grad_accum", "max_length", "save_steps", "save_total_limit"):
            check_int(getattr(self, name), name, minimum=1)
        check_int(self.warmup_steps, "warmup_steps", minimum=0)
        check_int(self.seed, "seed", minimum=0)
        if self.scheduler not in ("cosine", "linear", "constant", "cosine_with_min_lr"):
            raise FinetuneError(
                f"unknown scheduler {self.scheduler!r}; known: cosine, cosine_with_min_lr, "
                "linear, constant"
            )
        if self.min_lr is not None:
            check_float(self.min_lr, "min_lr", minimum=0.0, maximum=self.learning_rate)
            if self.scheduler != "cosine_with_min_lr":
                raise FinetuneError(
                    f"min_lr={self.min_lr} is the floor of scheduler='cosine_with_min_lr'; got "
                    f"scheduler={self.scheduler!r} (set it, or drop min_lr)"
                )
        elif self.scheduler == "cosine_with_min_lr":
            raise FinetuneError("scheduler='cosine_with_min_lr' needs min_lr= (e.g. 1e-5)")
        return self


@dataclass
class SFTResult:
    """Where the weights went (``weights``: the adapter or model folder), the optimizer steps
    done, the logged training losses (one per logging step), the wall time and whether the run
    resumed from a checkpoint."""

    weights: Path
    steps: int
    losses: list[float]
    seconds: float
    resumed_from: str | None
    settings: dict[str, Any]


def sft_dataset(examples: Iterable[Mapping[str, Any]]) -> Any:
    """A ``datasets.Dataset`` in TRL's conversational prompt/completion form.

    Each example has ``prompt`` (a string: one user message, or a list of chat messages) and
    ``completion`` (a string: the assistant's answer, or a one-message list).
    """
    require("datasets")
    from datasets import Dataset

    rows = []
    for i, ex in enumerate(examples):
        prompt, completion = ex.get("prompt"), ex.get("completion")
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        if isinstance(completion, str):
            completion = [{"role": "assistant", "content": completion}]
        if not isinstance(prompt, list) or not isinstance(completion, list) or not completion:
            raise FinetuneError(
                f"example {i}: needs 'prompt' (str or chat messages) and 'completion' (str or "
                f"an assistant message); got keys {sorted(ex)}"
            )
        rows.append({"prompt": prompt, "completion": completion})
    if not rows:
        raise FinetuneError("the SFT dataset is empty; collect transitions first")
    return Dataset.from_list(rows)


def last_checkpoint(out: str | os.PathLike[str]) -> str | None:
    """The newest ``checkpoint-<step>`` folder under ``<out>/checkpoints``, or ``None``."""
    folder = Path(out) / "checkpoints"
    if not folder.is_dir():
        return None
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder))


def _load(model: Any, dtype: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from smcplan.llm.registry import resolve

    if not isinstance(model, (str, os.PathLike)) and model is not None:
        raise FinetuneError(f"model must be a registry name or a folder; got {model!r}")
    path = resolve(model).path
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    weights = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    return weights, tokenizer


def _bf16(choice: bool | None) -> bool:
    import torch

    if choice is None:
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return bool(choice)


def train_sft(
    model: str | os.PathLike[str] | None,
    dataset: Any,
    out: str | os.PathLike[str],
    settings: SFTSettings | None = None,
    lora: LoraSettings | None = LoraSettings(),  # noqa: B008 (frozen dataclass)
    resume: bool = False,
    callbacks: Sequence[Any] = (),
    init_adapter: str | os.PathLike[str] | None = None,
) -> SFTResult:
    """Fine-tune ``model`` (a registry name, ``None`` = packaged SmolLM2, or a transformers
    folder) on ``dataset`` (:func:`sft_dataset`) with TRL's ``SFTTrainer``.

    ``lora``: LoRA settings (PEFT), or ``None`` for a full fine-tune.  ``resume``: continue from
    the last checkpoint under ``<out>/checkpoints`` (a fresh start when there is none).
    ``init_adapter``: a PEFT adapter folder to start from: training goes on from its weights
    and its LoRA configuration (``lora`` must not be ``None``; the manifest records the
    adapter's own settings), e.g. on new data.
    """
    require("trl", "peft", "datasets")
    import torch
    from transformers import set_seed
    from trl import SFTConfig, SFTTrainer

    s = (settings or SFTSettings()).validated()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if s.threads is not None:
        torch.set_num_threads(check_int(s.threads, "threads", minimum=1))
    set_seed(s.seed)  # the adapter's initial A matrices are drawn from the global torch RNG
    weights, tokenizer = _load(model, "float32")
    peft_config = lora_config(lora) if lora is not None else None
    if init_adapter is not None:
        from peft import PeftModel

        if lora is None:
            raise InvalidArgumentError(
                "init_adapter continues a LoRA adapter; a full fine-tune (lora=None) cannot "
                "start from one: pass lora settings or drop init_adapter"
            )
        if not (Path(init_adapter) / "adapter_config.json").is_file():
            raise InvalidArgumentError(
                f"init_adapter {os.fspath(init_adapter)!r} is not a PEFT adapter folder (no "
                "adapter_config.json); pass DIR/adapter of an earlier training run"
            )
        weights = PeftModel.from_pretrained(weights, os.fspath(init_adapter), is_trainable=True)
        peft_config = None
        found = weights.peft_config["default"]
        lora = replace(
            lora,
            r=int(found.r),
            alpha=int(found.lora_alpha),
            dropout=float(found.lora_dropout),
            target_modules=tuple(sorted(found.target_modules)),
        )
    config = SFTConfig(
        output_dir=str(out / "checkpoints"),
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.scheduler,
        lr_scheduler_kwargs={"min_lr": s.min_lr} if s.min_lr is not None else {},
        warmup_steps=s.warmup_steps,
        weight_decay=s.weight_decay,
        adam_beta2=s.adam_beta2,
        num_train_epochs=s.epochs,
        max_steps=-1 if s.max_steps is None else s.max_steps,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=s.grad_accum,
        max_length=s.max_length,
        save_strategy="steps",
        save_steps=s.save_steps,
        save_total_limit=s.save_total_limit,
        logging_steps=1,
        seed=s.seed,
        data_seed=s.seed,
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        completion_only_loss=True,
        packing=False,
        disable_tqdm=not s.progress,
        dataset_num_proc=None,
        bf16=_bf16(s.bf16),
        gradient_checkpointing=s.gradient_checkpointing,
    )
    trainer = SFTTrainer(
        model=weights,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=list(callbacks),
    )
    start = last_checkpoint(out) if resume else None
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=start)
    seconds = time.perf_counter() - t0
    target = out / ("adapter" if lora is not None else "model")
    trainer.model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    return SFTResult(
        weights=target,
        steps=int(trainer.state.global_step),
        losses=losses,
        seconds=seconds,
        resumed_from=start,
        settings={
            **asdict(s),
            "lora": lora.to_dict() if lora is not None else None,
            "init_adapter": os.fspath(init_adapter) if init_adapter is not None else None,
        },
    )


def completion_loss(lm: LanguageModel, examples: Sequence[Mapping[str, Any]]) -> list[float]:
    """Per example, the mean NLL per completion token under ``lm`` (a
    :class:`smcplan.llm.LanguageModel`), end-of-turn included: the quantity SFT minimises."""
    prompts = [ex["prompt"] for ex in examples]
    completions = [
        ex["completion"] if isinstance(ex["completion"], str) else ex["completion"][0]["content"]
        for ex in examples
    ]
    scores = lm.logprob(prompts, completions, add_eos=True)
    counts = [len(lm.encode_continuation(c, add_eos=True)) for c in completions]
    return [-float(v) / n for v, n in zip(scores, counts, strict=True)]
