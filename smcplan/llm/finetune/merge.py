r"""Merge a LoRA adapter into its base model and convert to GGUF for llama.cpp / llama-server.

:func:`merge_adapter` writes a plain transformers folder whose weights are
:math:`W = W_0 + \frac{\alpha}{r} B A` (PEFT's ``merge_and_unload``), loadable by
:func:`smcplan.llm.load_model` like any checkpoint.  :func:`to_gguf` runs llama.cpp's own
``convert_hf_to_gguf.py`` on such a folder; :func:`lora_to_gguf` runs ``convert_lora_to_gguf.py``
on an adapter, for ``llama-server --lora``.  The scripts come from the llama.cpp tree vendored
in llama-cpp-python's sdist (no other download): ``make setup-scale`` keeps them, with the
``conversion`` and ``gguf-py`` packages they import, in ``.venv/share/llama.cpp/``;
``SMCPLAN_LLAMA_CPP`` names another tree (e.g. a llama.cpp checkout).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from smcplan.llm.finetune.lora import FinetuneError, adapter_base, load_adapter

__all__ = ["merge_adapter", "llama_cpp_tree", "to_gguf", "lora_to_gguf", "GGUF_TYPES"]

#: output types of llama.cpp's converters
GGUF_TYPES = ("f32", "f16", "bf16", "q8_0")


def merge_adapter(
    adapter: str | os.PathLike[str],
    out: str | os.PathLike[str],
    base: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``base`` with ``adapter`` merged in (float32) to the folder ``out``.

    ``base``: a registry name or folder; default the base the adapter records.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from smcplan.llm.registry import resolve

    base = base if base is not None else adapter_base(adapter)
    path = resolve(base).path
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    merged = load_adapter(model, adapter).merge_and_unload()
    folder = Path(out)
    merged.save_pretrained(folder)
    AutoTokenizer.from_pretrained(path).save_pretrained(folder)
    return folder


#: the files of a llama.cpp tree that :func:`to_gguf` and :func:`lora_to_gguf` run
_CONVERTERS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py")
#: the repository this file lives in (an editable install)
_REPO_ROOT = Path(__file__).resolve().parents[3]


def _has_converters(tree: Path) -> bool:
    return all((tree / script).is_file() for script in _CONVERTERS)


def llama_cpp_tree(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The llama.cpp tree holding the converters, the first of: ``$SMCPLAN_LLAMA_CPP``; the
    ``share/llama.cpp`` that ``make setup-scale`` keeps in the running virtualenv
    (``sys.prefix``); ``.venv/share/llama.cpp`` of ``start`` (default: the current folder) or of
    the repository this file lives in; a whole sdist tree unpacked under ``.build/llama-server``
    there (a build in progress).  ``None`` when there is none."""
    env = os.environ.get("SMCPLAN_LLAMA_CPP")
    if env:
        return Path(env) if _has_converters(Path(env)) else None
    roots = [Path(start or os.getcwd()), _REPO_ROOT]
    candidates = [Path(sys.prefix) / "share" / "llama.cpp"]
    candidates += [root / ".venv" / "share" / "llama.cpp" for root in roots]
    for root in roots:
        for tree in sorted((root / ".build" / "llama-server").glob("llama_cpp_python-*")):
            candidates.append(tree / "vendor" / "llama.cpp")
    return next((tree for tree in candidates if _has_converters(tree)), None)


def _run(script: str, args: list[str]) -> None:
    tree = llama_cpp_tree()
    if tree is None:
        raise FinetuneError(
            f"llama.cpp's {script} was not found: run `make setup-scale` (it keeps the "
            "converters of the llama.cpp vendored in llama-cpp-python's sdist in "
            ".venv/share/llama.cpp) or set SMCPLAN_LLAMA_CPP to a llama.cpp checkout"
        )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "gguf-py"), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(tree / script), *args], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise FinetuneError(f"{script} failed (exit {done.returncode}): {done.stderr[-2000:]}")


def _outtype(outtype: str) -> str:
    if outtype not in GGUF_TYPES:
        raise FinetuneError(f"unknown GGUF outtype {outtype!r}; known: {', '.join(GGUF_TYPES)}")
    return outtype


def to_gguf(
    model_dir: str | os.PathLike[str], out_file: str | os.PathLike[str], outtype: str = "f16"
) -> Path:
    """Convert a transformers folder (e.g. :func:`merge_adapter`'s) to one GGUF file."""
    _run(
        "convert_hf_to_gguf.py",
        [str(model_dir), "--outfile", str(out_file), "--outtype", _outtype(outtype)],
    )
    return Path(out_file)


def lora_to_gguf(
    adapter: str | os.PathLike[str],
    out_file: str | os.PathLike[str],
    base_dir: str | os.PathLike[str] | None = None,
    outtype: str = "f32",
) -> Path:
    """Convert a PEFT adapter to a GGUF LoRA for ``llama-server -m BASE.gguf --lora OUT``.

    ``base_dir``: the base model's transformers folder (default: the one the adapter records).
    """
    from smcplan.llm.registry import resolve

    base = resolve(base_dir if base_dir is not None else adapter_base(adapter)).path
    _run(
        "convert_lora_to_gguf.py",
        [str(adapter), "--base", base, "--outfile", str(out_file), "--outtype", _outtype(outtype)],
    )
    return Path(out_file)
