"""The token-by-token decoding loop behind ``LanguageModel.sample``: one model forward per token.

From the state after the prompts (:class:`~smcplan.llm.prefill.Prefilled`, its rows already
repeated to one row per sample), each step takes the next-token logits ``l_t`` of every row and

    raw_t = log softmax(l_t)                           (the model, T = 1: ``logp``)
    s_t   = m_t ⊙ l_t / T, top-p filtered              (m_t: the grammar's mask, -inf outside)
    y_t ~ softmax(s_t)   (T > 0)   or   argmax s_t (T = 0)
    logq += log softmax(s_t)[y_t],   logp += raw_t[y_t]

then runs the model on ``y_t`` alone on top of the growing ``DynamicCache`` (explicit
``position_ids``, the 2-D attention mask extended by one column). A row stops at a stop token
(end-of-sequence), or where a text rule ends its reply (``stop_rule``, the first line or
sentence: :mod:`smcplan.llm.stops`); its later draws are replaced by EOS and count for nothing.
The loop ends when every row has stopped or after ``limit`` tokens. This is transformers' own
model forward and cache (no second forward is written); it replaces ``generate`` so that
``logq``/``logp`` are exact and the grammar mask is applied once per token.

The cache's layers are first given room for the ``limit`` new tokens (:class:`GrowingLayer`): a
``DynamicLayer`` appends each token with ``torch.cat``, copying the whole prompt's keys and
values of every layer at every step (10-15 % of a SmolLM2 decoding step with a 450-token
prompt, measured); here the new states are written into the free columns of one buffer and the
layer exposes the filled part as a view. The attention sees the same values in the same layout
(identical logits, tested).

Imports torch; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from smcplan.llm.nucleus import top_p_filter

__all__ = ["Decoded", "decode", "GrowingLayer", "reserve"]


def _growing_layer_class():
    from transformers.cache_utils import DynamicLayer

    class _GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` whose keys/values are views of preallocated buffers (module doc)."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
            super().__init__()
            b, h, n, d = keys.shape
            self._k = keys.new_empty((b, h, n + room, d))
            self._v = values.new_empty((b, values.shape[1], n + room, values.shape[3]))
            self._k[:, :, :n] = keys
            self._v[:, :, :n] = values
            self.keys, self.values = self._k[:, :, :n], self._v[:, :, :n]
            self.device, self.dtype, self.is_initialized = keys.device, keys.dtype, True

        def update(self, key_states, value_states, *args, **kwargs):
            n, m = self.keys.shape[-2], key_states.shape[-2]
            if n + m > self._k.shape[-2]:  # beyond the room: grow like a DynamicLayer
                self._k = self._v = None
                self.keys, self.values = self.keys.contiguous(), self.values.contiguous()
                self.__class__ = DynamicLayer
                return self.update(key_states, value_states, *args, **kwargs)
            self._k[:, :, n : n + m] = key_states
            self._v[:, :, n : n + m] = value_states
            self.keys, self.values = self._k[:, :, : n + m], self._v[:, :, : n + m]
            return self.keys, self.values

    return _GrowingLayer


_GROWING: list[type] = []


def GrowingLayer(keys: torch.Tensor, values: torch.Tensor, room: int):  # noqa: N802
    """A cache layer holding ``keys``/``values`` with room for ``room`` more positions."""
    if not _GROWING:
        _GROWING.append(_growing_layer_class())
    return _GROWING[0](keys, values, room)


def reserve(cache, room: int) -> None:
    """Give every plain ``DynamicLayer`` of ``cache`` room for ``room`` more positions (in place;
    other layer types are left as they are)."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or room < 1:
        return
    for i, layer in enumerate(layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys.numel():
            layers[i] = GrowingLayer(layer.keys, layer.values, room)


@dataclass
class Decoded:
    """What :func:`decode` returns: ``tokens[i, :count[i]]`` the draws of row ``i`` (its stop
    token included when ``done[i]``), ``logq``/``logp`` their summed log-probabilities (float64),
    ``cache`` the model cache holding the states of the first ``fed`` drawn tokens of every row
    (those that were run through the model)."""

    tokens: torch.Tensor
    count: torch.Tensor
    done: torch.Tensor
    logq: torch.Tensor
    logp: torch.Tensor
    cache: Any
    fed: int


def decode(
    model,
    cache,
    next_logits: torch.Tensor,
    input_ids: torch.Tensor,
    mask: torch.Tensor,
    last_pos: torch.Tensor,
    processor: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None,
    *,
    limit: int,
    temperature: float,
    top_p: float,
    generator: torch.Generator,
    stop_ids: torch.Tensor,
    eos_id: int,
    stop_rule: Any = None,
) -> Decoded:
    """Draw up to ``limit`` tokens per row (module docstring).

    ``input_ids`` (the prompts' input block) and ``mask`` (attention mask over the cache's
    columns) have one row per sample; ``last_pos[i]`` is the position of row ``i``'s last prompt
    token; ``processor(ids, logits) -> masked logits`` is the grammar (``None``: free text);
    ``stop_rule`` a :class:`smcplan.llm.stops.StopRule` (``None``: end-of-turn and ``limit``
    only).
    """
    R = next_logits.shape[0]
    device = next_logits.device
    logq = torch.zeros(R, dtype=torch.float64, device=device)
    logp = torch.zeros(R, dtype=torch.float64, device=device)
    done = torch.zeros(R, dtype=torch.bool, device=device)
    count = torch.zeros(R, dtype=torch.long, device=device)
    history = input_ids
    out: list[torch.Tensor] = []
    state = stop_rule.start(R) if stop_rule is not None else None
    reserve(cache, limit)
    for _ in range(limit):
        logits = next_logits.float()
        raw = torch.log_softmax(logits, dim=-1)
        scores = processor(history, logits.clone()) if processor is not None else logits
        if temperature > 0:
            scores = scores / temperature
            if top_p < 1.0:
                scores = top_p_filter(scores, top_p)
            lq = torch.log_softmax(scores, dim=-1)
            token = torch.multinomial(lq.exp(), 1, generator=generator).squeeze(1)
        else:
            lq = torch.log_softmax(scores, dim=-1)
            token = lq.argmax(-1)
        token = torch.where(done, torch.full_like(token, eos_id), token)
        live = ~done
        logq += torch.where(live, lq.gather(-1, token[:, None]).squeeze(1).double(), 0.0)
        logp += torch.where(live, raw.gather(-1, token[:, None]).squeeze(1).double(), 0.0)
        count += live.long()
        out.append(token)
        ended = torch.isin(token, stop_ids)
        if stop_rule is not None:
            by_text, state = stop_rule.step(token, state)
            ended = ended | (by_text & live)
        done = done | ended
        if bool(done.all()):
            break
        history = torch.cat([history, token[:, None]], dim=1)
        mask = torch.cat([mask, torch.ones_like(token)[:, None]], dim=1)
        last_pos = last_pos + 1
        res = model(
            input_ids=token[:, None],
            attention_mask=mask,
            position_ids=last_pos[:, None],
            cache=cache,
            use_cache=True,
        )
        cache, next_logits = res.cache, res.logits[:, -1, :]
    fed = len(out) - int(bool(done.all()))  # the last draw is run only when the loop went on
    tokens = torch.stack(out, dim=1) if out else torch.zeros((R, 0), dtype=torch.long)
    return Decoded(tokens, count, done, logq, logp, cache, fed)
