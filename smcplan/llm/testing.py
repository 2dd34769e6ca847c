"""A tiny random-weight Llama with a real byte-level BPE tokenizer, built offline in seconds.

Other layers' tests use :func:`tiny_model` as their fast language model: it is the same
:class:`~smcplan.llm.TransformersLanguageModel` type as the real one (same chat template format,
ChatML; same constrained generation and scoring code paths), only its weights are random, so its
outputs are schema-valid but meaningless.

The tokenizer is a byte-level BPE (the GPT-2/SmolLM2 scheme: every byte is a base token, so any
text, unicode included, can be encoded) trained on a small built-in corpus of text-game
sentences. The model is ``LlamaForCausalLM`` with 2 layers, hidden size 64, grouped-query
attention (4 heads, 2 KV heads), initialised from ``torch.manual_seed(seed)``. Both are saved
once under ``$SMCPLAN_CACHE/models/tiny-llama-<version>-<seed>`` (atomically, under a file lock)
and reloaded from there.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from smcplan.llm.convert import file_lock
from smcplan.llm.paths import cache_dir

__all__ = ["tiny_model", "tiny_model_path", "TINY_CONFIG"]

_VERSION = "v1"
TINY_CONFIG = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=4096,
    rms_norm_eps=1e-5,
    tie_word_embeddings=True,
)
_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' "
    "}}{% endif %}"
)
_WORDS = (
    "you are in the kitchen living room bedroom bathroom hallway garden. there is a coin key apple "
    "table fridge door drawer cabinet stove sink counter box. go north south east west; take open "
    "close put in on from to with examine look inventory. the door is open closed locked. you "
    "picked up opened closed moved took. task: find the coin and take it. yes no true false "
    'thought action triplets logic_check safety_check critique_score reason answer {} [] " : , 0 1'
)


def _corpus() -> list[str]:
    words = _WORDS.split()
    lines = [_WORDS]
    for i in range(200):
        lines.append(" ".join(words[(i * 7 + j * 13) % len(words)] for j in range(12)))
    return lines


def _build(folder: Path, seed: int) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.chat_template = _CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_CONFIG,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def tiny_model_path(seed: int = 0) -> Path:
    """Folder of the tiny model for ``seed``, building it on first use (about a second)."""
    target = cache_dir("models") / f"tiny-llama-{_VERSION}-{seed}"
    done = target / "config.json"
    if done.is_file():
        return target
    with file_lock(target.with_name(target.name + ".lock")):
        if done.is_file():
            return target
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
        try:
            _build(tmp, seed)
            if target.exists():
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def tiny_model(seed: int = 0, device: str = "cpu", threads: int | None = 1, **options):
    """The tiny random-weight Llama as a :class:`~smcplan.llm.TransformersLanguageModel` (tests).

    It runs on one CPU thread by default: its matrices are so small that thread synchronisation
    costs more than it saves (50x slower with 2 threads on a loaded 2-core machine).
    ``options`` go to :func:`~smcplan.llm.load_model` (e.g. ``prefix_cache=False``).
    """
    from smcplan.llm.loading import load_model

    return load_model(tiny_model_path(seed), device=device, seed=seed, threads=threads, **options)
