"""Fine-tuning on TRL + PEFT: LoRA configs and adapters, supervised fine-tuning, merging.

The only place (with the rest of :mod:`smcplan.llm`) that imports ``trl``, ``peft`` and
``datasets``; they are imported inside the functions, so ``import smcplan.llm.finetune`` loads
none of them (nor torch).

* :mod:`~smcplan.llm.finetune.lora`: :func:`lora_config`, :func:`save_adapter`,
  :func:`load_adapter`, :func:`is_adapter`;
* :mod:`~smcplan.llm.finetune.sft`: :func:`train_sft` (TRL's ``SFTTrainer``, checkpoints,
  resume), :func:`sft_dataset`, :func:`completion_loss`;
* :mod:`~smcplan.llm.finetune.merge`: :func:`merge_adapter`, :func:`to_gguf`,
  :func:`lora_to_gguf` (llama.cpp's converters from the vendored tree).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "LoraSettings",
    "lora_config",
    "save_adapter",
    "load_adapter",
    "is_adapter",
    "adapter_base",
    "copy_adapter_half",
    "SFTSettings",
    "SFTResult",
    "train_sft",
    "sft_dataset",
    "completion_loss",
    "merge_adapter",
    "to_gguf",
    "lora_to_gguf",
    "FinetuneError",
    "MissingTrainDependency",
    "last_checkpoint",
]

_WHERE = {
    "LoraSettings": "lora",
    "lora_config": "lora",
    "save_adapter": "lora",
    "load_adapter": "lora",
    "is_adapter": "lora",
    "adapter_base": "lora",
    "copy_adapter_half": "lora",
    "FinetuneError": "lora",
    "MissingTrainDependency": "lora",
    "last_checkpoint": "sft",
    "lora_to_gguf": "merge",
    "SFTSettings": "sft",
    "SFTResult": "sft",
    "train_sft": "sft",
    "sft_dataset": "sft",
    "completion_loss": "sft",
    "merge_adapter": "merge",
    "to_gguf": "merge",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
