"""Nucleus (top-p) filtering of next-token scores (Holtzman et al. 2020, "The Curious Case of
Neural Text Degeneration"): keep the smallest set of tokens whose probability reaches ``top_p``.

Imports torch only.
"""

from __future__ import annotations

import torch

__all__ = ["top_p_filter"]


def top_p_filter(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of tokens whose probability mass reaches ``top_p``."""
    sorted_scores, order = torch.sort(scores, descending=True, dim=-1)
    probs = torch.softmax(sorted_scores, dim=-1)
    before = probs.cumsum(-1) - probs  # mass strictly before each token
    drop_sorted = before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))
