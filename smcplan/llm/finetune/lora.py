r"""LoRA adapters with PEFT: the config, saving and loading.

LoRA (Hu et al. 2021) freezes a weight :math:`W_0 \in \mathbb{R}^{d\times k}` and learns a
low-rank update, :math:`h = W_0 x + \frac{\alpha}{r} B A x` with :math:`B \in \mathbb{R}^{d\times
r}` (initialised to 0, so the adapted model starts equal to the base), :math:`A \in
\mathbb{R}^{r\times k}` and dropout on :math:`x` in the adapter branch.  Defaults are RLAW's:
r = 16, :math:`\alpha` = 32 on the attention projections W_q, W_k, W_v, W_o.

An adapter folder is what PEFT's ``save_pretrained`` writes (``adapter_config.json`` +
``adapter_model.safetensors``); its config records the base model it was trained on.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError, SmcplanError, check_float, check_int

__all__ = [
    "FinetuneError",
    "MissingTrainDependency",
    "LoraSettings",
    "lora_config",
    "save_adapter",
    "load_adapter",
    "is_adapter",
    "adapter_base",
    "copy_adapter_half",
    "require",
]

#: the attention projections of Llama-family models (SmolLM2, the tiny test model)
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


class FinetuneError(SmcplanError, ValueError):
    """A fine-tuning input (adapter folder, dataset, settings) the trainer cannot use."""


class MissingTrainDependency(SmcplanError, ImportError):
    """trl / peft / datasets are not installed; the message says how to install them."""


def require(*modules: str) -> None:
    """Import-check ``modules``; raise :class:`MissingTrainDependency` naming the fix."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingTrainDependency(
            f"fine-tuning needs {', '.join(missing)}; install them with "
            "pip install 'smcplan[train]' (or pip install -c requirements/constraints.txt "
            "trl peft datasets)"
        )


@dataclass(frozen=True)
class LoraSettings:
    """Rank ``r``, scale ``alpha`` (the update is multiplied by alpha / r), ``dropout`` on the
    adapter input, and the ``target_modules`` that get an adapter."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] = field(default=ATTENTION)

    def validated(self) -> LoraSettings:
        check_int(self.r, "lora r", minimum=1)
        check_int(self.alpha, "lora alpha", minimum=1)
        check_float(self.dropout, "lora dropout", minimum=0.0, maximum=1.0, max_inclusive=False)
        if isinstance(self.target_modules, str) or not self.target_modules:
            raise InvalidArgumentError(
                f"target_modules must be a non-empty list of module names such as "
                f"{list(ATTENTION)}; got {self.target_modules!r}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["target_modules"] = list(self.target_modules)
        return out


def lora_config(settings: LoraSettings | None = None) -> Any:
    """``peft.LoraConfig`` for a causal LM from ``settings`` (default: RLAW's r=16, alpha=32)."""
    require("peft")
    from peft import LoraConfig

    s = (settings or LoraSettings()).validated()
    return LoraConfig(
        r=s.r,
        lora_alpha=s.alpha,
        lora_dropout=s.dropout,
        target_modules=list(s.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )


def is_adapter(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a PEFT adapter folder (it holds ``adapter_config.json``)."""
    return (Path(path) / "adapter_config.json").is_file()


def _check_adapter(path: str | os.PathLike[str]) -> Path:
    folder = Path(path).expanduser()
    if not is_adapter(folder):
        what = "does not exist" if not folder.exists() else "holds no adapter_config.json"
        raise FinetuneError(
            f"adapter {str(folder)!r} {what}; pass a folder written by save_adapter or "
            "`smcplan train world-model --out DIR` (DIR/adapter)"
        )
    return folder


def adapter_base(path: str | os.PathLike[str]) -> str | None:
    """The base model an adapter was trained on (``base_model_name_or_path``), or ``None``."""
    folder = _check_adapter(path)
    with open(folder / "adapter_config.json", encoding="utf-8") as handle:
        return json.load(handle).get("base_model_name_or_path") or None


def copy_adapter_half(
    src: str | os.PathLike[str], dest: str | os.PathLike[str], base_model: str
) -> list[str]:
    r"""Copy the adapter folder ``src`` into ``dest`` with every floating-point tensor stored as
    fp16 (a LoRA update :math:`\Delta W = \tfrac{\alpha}{r} B A` keeps about 3 significant
    digits per weight) and ``base_model_name_or_path = base_model`` (a registry name, so that it
    loads on any machine); PEFT casts the weights back to the base model's dtype on loading.
    Returns the names of the files written."""
    from safetensors.torch import load_file, save_file

    from smcplan.jsonfile import write_json

    folder = _check_adapter(src)
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    small = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in tensors.items()}
    save_file(small, str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = base_model
    write_json(out / "adapter_config.json", config)
    return ["adapter_config.json", "adapter_model.safetensors"]


def save_adapter(model: Any, path: str | os.PathLike[str]) -> Path:
    """Write a PEFT model's adapter (only the LoRA weights, safetensors) to ``path``."""
    if not hasattr(model, "peft_config"):
        raise FinetuneError(
            f"save_adapter needs a PEFT model (peft.get_peft_model(...)); got "
            f"{type(model).__name__}"
        )
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    return folder


def load_adapter(model: Any, path: str | os.PathLike[str], trainable: bool = False) -> Any:
    """``model`` (a transformers causal LM) with the adapter at ``path`` applied (a
    ``peft.PeftModel``; frozen unless ``trainable``)."""
    require("peft")
    from peft import PeftModel

    folder = _check_adapter(path)
    return PeftModel.from_pretrained(model, str(folder), is_trainable=trainable)
