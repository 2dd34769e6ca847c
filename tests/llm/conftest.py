"""Fixtures of the LLM-layer tests: the tiny random-weight model (fast) and SmolLM2 (slow, once)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny():
    """The tiny random-weight Llama (built once into the cache, then reloaded in ~1 s)."""
    from smcplan.llm.testing import tiny_model

    return tiny_model(seed=0)


@pytest.fixture(scope="session")
def smol():
    """The packaged SmolLM2-135M-Instruct, fp32 on CPU (converted once into the cache)."""
    from smcplan.llm import load_model

    return load_model()
