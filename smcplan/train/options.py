"""The ``--opt KEY=VALUE`` options of each trainer, typed: one schema per trainer.

``smcplan train <trainer> --opt KEY=VALUE`` reads each value as JSON when it can (``full=true``
is ``True``, ``max_examples=200`` is ``200``) and as text otherwise (``full=no`` is ``"no"``).
:func:`trainer_options` converts every value strictly against the trainer's schema
(:mod:`smcplan.options`): a boolean is ``true false 1 0 yes no`` and nothing else (a loose
``bool("no")`` is ``True``: ``full=no`` ran a full fine-tune), an integer is an integer
(``max_examples=abc`` and ``=1.5`` are refused), and an unknown key lists the known ones, each
error naming the option, the value and the fix.  Deeper checks (a scheduler's ``min_lr``, ...)
stay with the settings the values go to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smcplan.options import (
    MAX_SEED,
    boolean,
    choice,
    int_list,
    integer,
    real,
    real_or_list,
    text,
    text_list,
    typed_options,
)

__all__ = ["SCHEMAS", "trainer_options"]


def _targets(value: Any, name: str) -> list[str]:
    """Converter: what a world model writes, a list (``["observation","reward","done"]``) or a
    comma-separated text (:func:`smcplan.llm.roles.world_outcome.check_targets`)."""
    from smcplan.llm.roles.world_outcome import check_targets

    return list(check_targets(value, name))


_SFT = {
    "max_examples": integer(1),
    "lora_r": integer(1),
    "lora_alpha": integer(1),
    "max_length": integer(1),
    "grad_accum": integer(1),
    "threads": integer(1),
}

#: trainer name -> option -> converter
SCHEMAS: dict[str, dict[str, Any]] = {
    "world-model": {
        **_SFT,
        "depths": int_list(0),
        "full": boolean,
        "scheduler": choice("cosine", "linear", "constant", "cosine_with_min_lr"),
        "warmup_steps": integer(0),
        "init_adapter": text,
        "real_share": real(0.0, 1.0),
        "outcome_share": real(0.0, 1.0),
        "target": choice("full", "head"),
        "targets": _targets,
    },
    "critic": {
        **_SFT,
        "negatives_per_state": integer(0),
        "warmup_steps": integer(0),
        "map_notes": boolean,
        "adam_beta2": real(0.0, 1.0),
    },
    "critic-head": {
        "negatives_per_state": integer(0),
        "max_examples": integer(1),
        "map_notes": boolean,
        "adapter": text,
        "C": real_or_list(0.0, min_inclusive=False),
        "folds": integer(2),
        "batch": integer(1),
        "threads": integer(1),
    },
    "value-head": {
        "within": integer(0),
        "discount": real(0.0, 1.0),
        "heldout": text_list,
        "max_examples": integer(1),
        "adapter": text,
        "C": real_or_list(0.0, min_inclusive=False),
        "folds": integer(2),
        "batch": integer(1),
        "threads": integer(1),
        "text_features": boolean,
    },
    "rollout-labels": {
        "rollouts": integer(1),
        "rollout_steps": integer(1),
        "policy": choice("untried", "uniform"),
        "env": text,
    },
    "value-siblings": {
        "labels": text_list,
        "heldout": text_list,
        "heldout_labels": text_list,
        "obs_chars": integer(20),
        "max_states": integer(1),
        "max_siblings": integer(2),
        "world_model": text,
        "world_model_tokens": integer(1),
        "adapter": text,
        "C": real_or_list(0.0, min_inclusive=False),
        "folds": integer(2),
        "threads": integer(1),
    },
    "cold-start": dict(_SFT),
    "grpo-mr": {
        "env": text,
        "seeds": int_list(0, MAX_SEED),
        "split": text,
        "adapter": text,
        "group_size": integer(None),  # checked (with the fix) by check_group_size
        "iterations": integer(1),
        "alpha": real(),  # checked (with the fix) by check_alpha
        "eps": real(0.0, min_inclusive=False),
        "normalize": text,
        "clip_eps": real(0.0, min_inclusive=False),
        "kl_coef": real(0.0),
        "minibatch_size": integer(1),
        "threads": integer(1),
        "max_episode_steps": integer(1),
        "vanilla": boolean,
    },
    "grpo-mr-head": {
        "env": text,
        "seeds": int_list(0, MAX_SEED),
        "split": text,
        "init_head": text,
        "group_size": integer(None),  # checked (with the fix) by check_group_size
        "iterations": integer(0),
        "seeds_per_iteration": integer(0),
        "eval_seeds": int_list(0, MAX_SEED),
        "eval_split": text,
        "eval_every": integer(1),
        "max_episode_steps": integer(1),
        "alpha": real(),  # checked (with the fix) by check_alpha
        "vanilla": boolean,
        "eps": real(0.0, min_inclusive=False),
        "normalize": choice("mean_std", "mean"),
        "clip_eps": real(0.0, min_inclusive=False),
        "kl_coef": real(0.0),
        "max_grad_norm": real(0.0, min_inclusive=False),
        "l2": real_or_list(0.0, min_inclusive=False),
        "l2_folds": integer(2),
        "feature_cache": text,
        "recent": integer(0),
        "layers": int_list(None),
        "threads": integer(1),
        "batch": integer(1),
        "cache_entries": integer(1),
        "map_notes": boolean,
        "context": choice("full", "task"),
    },
}


def trainer_options(trainer: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` (a :class:`~smcplan.train.registry.TrainRequest`'s) checked and converted
    against the schema of ``trainer``; ``None`` values keep the defaults."""
    return typed_options(f"trainer {trainer!r}", dict(options or {}), SCHEMAS[trainer])
