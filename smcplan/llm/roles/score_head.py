r"""A critic whose score is read off a linear head on the language model's hidden state.

RLAW's critic writes its ``critique_score`` as one digit of a generated JSON answer.  The score
head reads the same decision from the *position* at which that digit would be written: the
critic role's prompt :math:`x_a` for action :math:`a`, rendered with the chat template and
followed by the answer's prefix ``{"logic_check": true, "safety_check": true,
"critique_score": `` (:data:`CRITIC_PREFIX`).  With :math:`h_\ell(x)` the hidden state of the
last token after decoder layer :math:`\ell` (``hidden_states[ℓ]`` of a transformers model;
``-1`` is the last layer, after the final norm), the features are the standardised
concatenation over the head's layers :math:`L`,

.. math:: z(x) = \big(\mathrm{concat}_{\ell \in L}\, h_\ell(x) - \mu\big) \oslash \sigma,

and the score is a logistic regression on them,

.. math:: s(a) = \sigma_{\mathrm{logistic}}\big(w^\top z(x_a) + b\big) \in (0, 1),

the probability, under the head, that :math:`a` is the gold action (trained by
:mod:`smcplan.train.critic_head`).  The language model's weights are not changed by the head:
the same model (with or without a LoRA adapter merged by ``load_model``) serves the actor and
the head.  :class:`ScoreCritic` answers like :class:`~smcplan.llm.roles.judges.Critic`, with
``critique_score = s(a)``, so the RLAW agent's accept rule (``s >= tau``) and its fallback to
the best-scored proposal are unchanged.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import write_json
from smcplan.llm.roles.judges import Critic, Critique

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel, Prompt

__all__ = [
    "CRITIC_PREFIX",
    "action_thought",
    "HEAD_FILE",
    "ScoreHead",
    "hidden_features",
    "is_score_head",
    "ScoreCritic",
]

#: the critic's answer up to its score: the head reads the position after it
CRITIC_PREFIX = '{"logic_check": true, "safety_check": true, "critique_score": '


def action_thought(action: str) -> str:
    """The thought slot of the critic's training prompts, ``"I will <action>."``: gold shards
    hold no actor thoughts, so a critic trained on them (:mod:`smcplan.train.critic`) saw this
    form, and :class:`ScoreCritic` gives its head the same at run time."""
    return f"I will {action}."


#: the file that marks a folder as a score head (its arrays sit beside it in ``score_head.npz``)
HEAD_FILE = "score_head.json"
_ARRAYS = "score_head.npz"


def is_score_head(folder: str | os.PathLike[str] | None) -> bool:
    """Whether ``folder`` holds a :class:`ScoreHead` (``score_head.json``)."""
    return folder is not None and (Path(folder) / HEAD_FILE).is_file()


@dataclass
class ScoreHead:
    """``s = logistic(w . (concat_l h_l - mean) / scale + b)`` (module docstring).

    ``layers``: the hidden-state indices read (``-1``: the last layer); ``mean`` / ``scale``:
    the standardisation, fitted on the training features; ``weight`` / ``bias``: the logistic
    regression; ``info``: what the trainer recorded (regularisation, cross-validated AUC,
    the model, whether the prompts carried map notes)."""

    layers: tuple[int, ...]
    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    bias: float
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.layers = tuple(int(x) for x in self.layers)
        if not self.layers:
            raise InvalidArgumentError("layers: empty; give at least one hidden-state index")
        self.mean, self.scale, self.weight = (
            np.asarray(a, dtype=np.float64).reshape(-1)
            for a in (self.mean, self.scale, self.weight)
        )
        dims = {self.mean.size, self.scale.size, self.weight.size}
        if len(dims) != 1:
            raise InvalidArgumentError(
                f"score head: mean, scale and weight differ in size ({self.mean.size}, "
                f"{self.scale.size}, {self.weight.size}); they must match the features"
            )
        if not np.all(self.scale > 0) or not np.all(np.isfinite(self.weight)):
            raise InvalidArgumentError(
                "score head: scale must be positive and weight finite; refit the head"
            )
        self.bias = float(self.bias)

    @property
    def dim(self) -> int:
        return int(self.weight.size)

    def logits(self, features: np.ndarray) -> np.ndarray:
        """``w . z + b`` for each row of ``features`` (shape ``(n, dim)``)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise InvalidArgumentError(
                f"features: shape {x.shape}, the head reads (n, {self.dim}); extract them with "
                f"the head's layers {list(self.layers)} from the model it was fitted on"
            )
        return ((x - self.mean) / self.scale) @ self.weight + self.bias

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """The scores ``s`` in (0, 1): the logistic of :meth:`logits`, computed stably."""
        return 0.5 * (1.0 + np.tanh(0.5 * self.logits(features)))  # = 1 / (1 + e^-z), no overflow

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """``folder/score_head.json`` (layers, bias, info) and ``folder/score_head.npz``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / _ARRAYS, mean=self.mean, scale=self.scale, weight=self.weight)
        meta = {"layers": list(self.layers), "bias": self.bias, "dim": self.dim, "info": self.info}
        write_json(folder / HEAD_FILE, meta)
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> ScoreHead:
        """The head saved in ``folder`` by :meth:`save`."""
        folder = Path(folder)
        if not is_score_head(folder) or not (folder / _ARRAYS).is_file():
            raise InvalidArgumentError(
                f"{os.fspath(folder)!r} is not a score head folder (needs {HEAD_FILE} and "
                f"{_ARRAYS}); train one with smcplan train critic-head (or value-head)"
            )
        meta = json.loads((folder / HEAD_FILE).read_text(encoding="utf-8"))
        with np.load(folder / _ARRAYS) as arrays:
            return cls(
                tuple(meta["layers"]),
                arrays["mean"],
                arrays["scale"],
                arrays["weight"],
                meta["bias"],
                dict(meta.get("info", {})),
            )


def hidden_features(
    lm: LanguageModel,
    prompts: Sequence[Prompt],
    layers: Sequence[int] = (-1,),
    assistant_prefix: str = CRITIC_PREFIX,
    batch: int = 4,
    share_prefix: bool = False,
) -> np.ndarray:
    """The hidden states of the last token of each ``prompt`` followed by ``assistant_prefix``
    (``lm.encode_prompt``: the text the model scores and samples), at each of ``layers``,
    concatenated: shape ``(len(prompts), len(layers) * hidden_size)``, float64.

    Needs an in-process transformers model (``load_model()``); ``batch`` prompts per forward
    pass, right-padded, each read at its own last token (padding changes no real position).
    ``share_prefix``: where the prompts of a batch share at least :data:`MIN_SHARED_TOKENS`
    leading tokens (siblings: one state, each action), the shared tokens are run once and
    their key-value cache is repeated for the batch's suffixes (the same numbers up to float
    rounding: a causal model's prefix does not see what follows it)."""
    import torch

    check_int(batch, "batch", minimum=1)
    model = getattr(lm, "model", None)
    if model is None or not hasattr(model, "config") or not callable(model):
        raise InvalidArgumentError(
            f"hidden_features needs an in-process transformers model (load_model()); got "
            f"{type(lm).__name__}: a remote or llama.cpp engine returns no hidden states"
        )
    depth = int(model.config.num_hidden_layers)
    for layer in layers:
        if not -(depth + 1) <= int(layer) <= depth:
            raise InvalidArgumentError(
                f"layers: {layer} is outside the model's hidden states -{depth + 1}..{depth}"
            )
    if not prompts:
        return np.zeros((0, len(layers) * int(model.config.hidden_size)))
    pad = int(getattr(lm, "pad_token_id", None) or 0)
    device = next(model.parameters()).device
    rows = []
    for i in range(0, len(prompts), batch):
        ids = [
            lm.encode_prompt(p, assistant_prefix=assistant_prefix) for p in prompts[i : i + batch]
        ]
        shared = _common_prefix(ids) if share_prefix and len(ids) > 1 else 0
        if shared >= MIN_SHARED_TOKENS:
            rows.append(_shared_prefix_rows(model, ids, shared, layers, pad, device))
            continue
        width = max(len(x) for x in ids)
        tokens = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for j, x in enumerate(ids):
            tokens[j, : len(x)] = torch.tensor(x)
            mask[j, : len(x)] = 1
        last = torch.tensor([len(x) - 1 for x in ids])
        with torch.no_grad():
            out = model(
                input_ids=tokens.to(device),
                attention_mask=mask.to(device),
                output_hidden_states=True,
                use_cache=False,
                logits_to_keep=1,  # the vocabulary projection of one position, not of all
            )
        picked = [
            out.hidden_states[int(layer)][torch.arange(len(ids)), last.to(device)]
            for layer in layers
        ]
        rows.append(torch.cat(picked, dim=-1).float().cpu().numpy().astype(np.float64))
    return np.concatenate(rows, axis=0)


#: the fewest shared leading tokens worth a separate prefix pass (``share_prefix``)
MIN_SHARED_TOKENS = 16


def _common_prefix(ids: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens all ``ids`` share, leaving each at least one of its own."""
    n = min(len(x) for x in ids) - 1
    first = ids[0]
    for x in ids[1:]:
        k = 0
        while k < n and x[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def _shared_prefix_rows(
    model: Any, ids: Sequence[Sequence[int]], shared: int, layers: Sequence[int], pad: int,
    device: Any,
) -> np.ndarray:  # fmt: skip
    """:func:`hidden_features`' rows of one batch whose first ``shared`` tokens are the same:
    one pass over them (cached), then the suffixes, right-padded, on the repeated cache."""
    import torch
    from transformers import DynamicCache

    with torch.no_grad():
        head = model(
            input_ids=torch.tensor([list(ids[0][:shared])], device=device),
            output_hidden_states=True,
            use_cache=True,
            cache=DynamicCache(),
            logits_to_keep=1,
        )
        cache = head.cache
        cache.batch_repeat_interleave(len(ids))
        tails = [list(x[shared:]) for x in ids]
        width = max(len(t) for t in tails)
        tokens = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), shared + width), dtype=torch.long)
        mask[:, :shared] = 1
        for j, t in enumerate(tails):
            tokens[j, : len(t)] = torch.tensor(t)
            mask[j, shared : shared + len(t)] = 1
        out = model(
            input_ids=tokens.to(device),
            attention_mask=mask.to(device),
            cache=cache,
            output_hidden_states=True,
            use_cache=True,
            logits_to_keep=1,
        )
    last = torch.tensor([len(t) - 1 for t in tails], device=device)
    picked = [out.hidden_states[int(layer)][torch.arange(len(ids)), last] for layer in layers]
    return torch.cat(picked, dim=-1).float().cpu().numpy().astype(np.float64)


class ScoreCritic(Critic):
    """``critic(tasks, contexts, thoughts, actions, notes=None) -> [Critique]`` scored by a
    :class:`ScoreHead` on ``lm``'s hidden states (module docstring): the prompt is the
    ``critic`` role's (:meth:`Critic.prompts`), so a head fitted on
    :func:`smcplan.train.critic.critic_examples` sees at run time exactly what it was fitted
    on.  ``critique_score`` is the head's probability (not rounded to the generative critic's
    0.1 grid); the checks are ``True`` (the head judges the action only) and ``reason`` states
    the score.  The prompt's thought slot is :func:`action_thought` of the action, the form the
    head was fitted on, whatever thought the actor wrote.  Deterministic: ``seed`` is accepted
    for the :class:`~smcplan.llm.roles.judges.Critic` interface and unused."""

    def __init__(
        self, lm: LanguageModel, head: ScoreHead | str | os.PathLike[str], **kwargs: Any
    ) -> None:
        super().__init__(lm, **kwargs)
        self.head = head if isinstance(head, ScoreHead) else ScoreHead.load(head)

    def scores(self, prompts: Sequence[Prompt]) -> list[float]:
        """The head's score of each critic prompt."""
        feats = hidden_features(self.lm, prompts, self.head.layers)
        return [float(p) for p in self.head.probabilities(feats)]

    def __call__(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        thoughts: Sequence[str],
        actions: Sequence[str],
        seed: int | None = None,
        notes: Sequence[str] | None = None,
    ) -> list[Critique]:
        if len(thoughts) != len(actions):
            raise InvalidArgumentError(
                f"ScoreCritic: {len(thoughts)} thoughts for {len(actions)} actions; give one each"
            )
        # the head was fitted on the thought slot "I will <action>." (action_thought): the
        # actor's own thought would be text it never saw (it judges the action, not the thought)
        thoughts = [action_thought(a) for a in actions]
        prompts = self.prompts(tasks, contexts, thoughts, actions, notes)
        out = []
        for s in self.scores(prompts):
            if not math.isfinite(s):
                raise InvalidArgumentError(f"score head: a non-finite score {s}; refit the head")
            out.append(Critique(True, True, s, f"score head: P(gold action) = {s:.3f}"))
        return out
