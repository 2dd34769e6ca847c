"""``load_model``: registry name / folder / hub id → a :class:`~smcplan.llm.LanguageModel`.

Quantisation (bitsandbytes): ``"nf4"`` is 4-bit NormalFloat (Dettmers et al. 2023, "QLoRA"),
``"int8"`` is LLM.int8() (Dettmers et al. 2022). Both also work on CPU with bitsandbytes 0.50
through its PyTorch fallbacks (measured with SmolLM2: NF4 166 MB, int8 220 MB, fp32 538 MB);
NF4 prints a harmless "Failed to load CPU gemm_4bit_forward ... No module named 'kernels'" and
int8 warns that inputs are cast to float16. See docs/llm.md.

Imports torch and transformers lazily (inside ``load_model``); must not import
``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
from typing import Any

from smcplan.llm.registry import hub_error, resolve

__all__ = ["load_model", "QUANTIZATIONS"]

QUANTIZATIONS = (None, "nf4", "int8")
SMALL_MODEL_PARAMS = 500_000_000
_DTYPES = ("float32", "bfloat16", "float16")


def _dtype(dtype: Any, device: str, quantization: str | None):
    import torch

    if dtype is None:
        return torch.float32 if device == "cpu" else torch.bfloat16
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(_DTYPES)} or a torch.dtype")
    return getattr(torch, dtype)


def _check_adapter_target(name_or_path: Any, quantization: str | None, adapter: Any) -> None:
    from smcplan.llm.finetune.lora import FinetuneError, adapter_base

    if isinstance(name_or_path, str) and name_or_path.startswith(("llamacpp:", "openai:")):
        raise FinetuneError(
            f"adapter= applies to in-process transformers models, not {name_or_path!r}: merge "
            "the adapter and convert it to GGUF (smcplan.llm.finetune.to_gguf), or start "
            "llama-server with --lora ADAPTER.gguf (docs/train.md)"
        )
    if quantization is not None:
        raise FinetuneError(
            f"adapter= with quantization={quantization!r} is not supported: merge the adapter "
            "first (smcplan.llm.finetune.merge_adapter) and quantize the merged folder"
        )
    adapter_base(adapter)  # a missing or non-adapter folder is refused before any loading


def load_model(
    name_or_path: str | os.PathLike[str] | None = None,
    quantization: str | None = None,
    device: str | None = None,
    dtype: Any = None,
    seed: int = 0,
    threads: int | None = None,
    prefix_cache: bool = True,
    prefix_cache_bytes: int | None = None,
    adapter: str | os.PathLike[str] | None = None,
    **remote: Any,
):
    """Load a causal LM and its tokenizer as a
    :class:`~smcplan.llm.backends.hf.TransformersLanguageModel`.

    ``name_or_path``: ``None`` (the packaged SmolLM2-135M-Instruct), a name from
    ``models/registry.json`` (``"smollm2-135m"``, ``"gemma3-270m"``), a transformers folder, a
    ``.gguf`` file, or a Hugging Face hub id. ``quantization``: ``None``, ``"nf4"`` or ``"int8"``.
    ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:1"``…; default CUDA when available. ``dtype``:
    weights/compute dtype, default float32 on CPU and bfloat16 on CUDA. ``seed`` seeds the
    object's stream of per-call seeds (calls that pass ``seed=`` explicitly ignore it).
    ``threads``: CPU intra-op threads used during this model's calls. ``None`` picks 1 for a
    model under ``SMALL_MODEL_PARAMS`` parameters on CPU and torch's setting otherwise: a small
    model's step is hundreds of tiny ops whose thread synchronisation dominates (SmolLM2 on a
    loaded 2-core machine: 16 tokens at batch 2 took 2.8 s with 1 thread, 26.5 s with 2).
    ``prefix_cache``: keep the key/value states of prompts across calls and reuse the longest
    stored prefix of each new prompt (:mod:`smcplan.llm.prefix_cache`; ``False`` turns it off);
    ``prefix_cache_bytes`` bounds it (default 1 GiB, least recently used prefixes evicted).

    ``"openai:<base_url>#<model>"`` (e.g. ``"openai:http://127.0.0.1:8000/v1#smollm2-135m"``)
    connects to a serving engine instead (vLLM, SGLang, llama.cpp server) and returns a
    :class:`~smcplan.llm.backends.remote.client.RemoteLanguageModel`; ``remote`` keywords
    (``engine``, ``tokenizer``, ``timeout``, ``retries``, ``api_key``, ``window``, ``slots``) go to
    it. Quantisation, device and dtype are then the server's business and must be left unset (the
    engine keeps its own prefix cache; ``prefix_cache``/``prefix_cache_bytes`` apply to local models
    only).

    ``"llamacpp:<name or .gguf>"`` (``"llamacpp:"`` alone: the packaged SmolLM2 GGUF) runs the
    GGUF on llama.cpp in this process
    (:class:`~smcplan.llm.backends.llamacpp.LlamaCppLanguageModel`; ``threads``, default 1, and the
    keywords ``n_ctx`` and ``tokenizer`` go to it).

    ``adapter``: a PEFT LoRA adapter folder (:mod:`smcplan.llm.finetune`) applied to the loaded
    transformers model and merged into its weights (:math:`W = W_0 + \frac{\alpha}{r}BA`), so
    every code path (prefix cache included) runs a plain model.  Remote and llama.cpp models take
    no adapter here: merge it and convert to GGUF (:func:`smcplan.llm.finetune.to_gguf`), or give
    llama-server the converted adapter with ``--lora`` (docs/train.md).
    """
    if adapter is not None:
        _check_adapter_target(name_or_path, quantization, adapter)
    if isinstance(name_or_path, str) and name_or_path.startswith("llamacpp:"):
        from smcplan.llm.backends.llamacpp import LlamaCppLanguageModel

        local = {"quantization": quantization, "device": device, "dtype": dtype}
        given = sorted(k for k, v in local.items() if v is not None)
        if given:
            raise ValueError(
                f"{given} cannot be set for the llama.cpp model {name_or_path!r}: the GGUF file "
                "decides them; leave them unset"
            )
        name = name_or_path[len("llamacpp:") :] or "smollm2-135m"
        return LlamaCppLanguageModel(
            name, seed=seed, threads=1 if threads is None else threads, **remote
        )
    if isinstance(name_or_path, str) and name_or_path.startswith("openai:"):
        from smcplan.llm.backends.remote.client import RemoteLanguageModel, parse_remote

        local = {"quantization": quantization, "device": device, "dtype": dtype, "threads": threads}
        given = sorted(k for k, v in local.items() if v is not None)
        if given:
            raise ValueError(
                f"{given} cannot be set for the remote model {name_or_path!r}: the serving "
                "engine decides them; leave them unset"
            )
        spec = parse_remote(name_or_path)
        return RemoteLanguageModel(spec.base_url, spec.model, seed=seed, **remote)
    if remote:
        raise TypeError(
            f"load_model got unexpected keyword(s) {sorted(remote)}; they apply only to remote "
            "models ('openai:<base_url>#<model>')"
        )
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from smcplan.llm.backends.hf import TransformersLanguageModel
    from smcplan.llm.prefix_cache import DEFAULT_PREFIX_CACHE_BYTES

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; valid: None, 'nf4', 'int8'")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"device {device!r} requested but torch sees no CUDA device; use device='cpu'"
        )
    torch_dtype = _dtype(dtype, device, quantization)
    resolved = resolve(name_or_path)
    kwargs: dict[str, Any] = {"dtype": torch_dtype}
    if resolved.is_hub_id:
        offline = any(
            os.environ.get(v, "") not in ("", "0")
            for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
        )
        kwargs["local_files_only"] = offline
    if quantization is not None:
        from transformers import BitsAndBytesConfig

        if quantization == "nf4":
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch_dtype
            )
        else:
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        kwargs["device_map"] = {"": device}
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            resolved.path,
            **(
                {"local_files_only": kwargs["local_files_only"]}
                if "local_files_only" in kwargs
                else {}
            ),
        )
        model = AutoModelForCausalLM.from_pretrained(resolved.path, **kwargs)
    except OSError as exc:
        if resolved.is_hub_id:
            raise hub_error(resolved.name, exc) from exc
        raise
    if quantization is None:
        model = model.to(device)
    if adapter is not None:
        from smcplan.llm.finetune.lora import load_adapter

        model = load_adapter(model, adapter).merge_and_unload()
        model.eval()
    if threads is None and device == "cpu" and model.num_parameters() < SMALL_MODEL_PARAMS:
        threads = 1
    return TransformersLanguageModel(
        model,
        tokenizer,
        name=resolved.name if adapter is None else f"{resolved.name}+{os.fspath(adapter)}",
        seed=seed,
        threads=threads,
        prefix_cache=prefix_cache,
        prefix_cache_bytes=DEFAULT_PREFIX_CACHE_BYTES
        if prefix_cache_bytes is None
        else prefix_cache_bytes,
    )
