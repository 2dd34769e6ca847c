"""Convert a GGUF checkpoint once into a transformers folder in the cache, atomically, under a lock.

transformers can read GGUF directly (``from_pretrained(folder, gguf_file=...)``), but it
de-quantises every tensor on each load (~20 s for SmolLM2-135M on 2 CPU cores). We pay that once:
the de-quantised model is saved as safetensors into ``$SMCPLAN_CACHE/models/<name>`` and later
loads take ~1 s. ``save_pretrained`` refuses a GGUF-quantised model, so the GGUF quantiser
(``model.hf_quantizer``) and ``config.quantization_config`` are cleared first: the tensors are
already plain floats at that point.

Concurrency: an exclusive ``fcntl`` lock on ``<target>.lock`` serialises converters; the model is
written into a temporary sibling folder and renamed into place, so a reader never sees a partial
folder (``os.rename`` of a directory is atomic on POSIX within one file system).

Imports transformers lazily; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["convert_gguf", "is_converted", "assemble_chunks", "file_lock"]

_DONE = "smcplan-converted.txt"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if needed) for the ``with`` body."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def is_converted(target: Path) -> bool:
    """True when ``target`` holds a finished conversion (its marker file is written last)."""
    return (target / _DONE).is_file()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_chunks(chunks: Sequence[Path], target: Path, sha256: str | None = None) -> Path:
    """Concatenate ``chunks`` into ``target`` (atomic rename), checking ``sha256`` when given."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.with_name(target.name + ".lock")):
        if target.is_file():
            return target
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".assemble-")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    with open(chunk, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
            if sha256 is not None and (got := _sha256(tmp)) != sha256:
                raise ValueError(f"assembled {target.name} has sha256 {got}, expected {sha256}")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


def convert_gguf(gguf_path: Path, target: Path) -> Path:
    """De-quantise ``gguf_path`` into a transformers folder at ``target`` (once; then a no-op).

    Returns ``target``. Safe to call from several processes at once: the first converts, the
    others wait on the lock and then find the finished folder.
    """
    if is_converted(target):
        return target
    with file_lock(target.with_name(target.name + ".lock")):
        if is_converted(target):
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
            model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
            # The GGUF quantiser only describes how the file was stored; the tensors are floats now.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / _DONE).write_text(f"converted from {gguf_path}\n")
            if target.exists():  # a stale, unfinished folder (no marker): replace it
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target
