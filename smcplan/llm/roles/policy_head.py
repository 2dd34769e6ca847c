r"""RLVMR's policy as a linear-softmax head over a step's candidate (tag, action) pairs.

Instead of generating ``<tag>...</tag><action>a</action>``, the agent *scores* the step's
candidates :math:`C_t = G \times A_t` (the meta-reasoning tags times the admissible actions).
Candidate :math:`c = (g, a)` is written ``"g: a"`` (:func:`candidate_text`) as the assistant's
answer after a short user prompt holding the state text :math:`s_t` (:func:`state_text`: the
task, the actions tried so far, the last few steps and the current observation); a head
trained with map notes adds to each answer a line of what the agent's place map says about
``a`` (a plain string its caller computes: this module reads no map).  With
:math:`h_\ell(x)` the hidden state of the last token of that prompt after decoder layer
:math:`\ell` of the *frozen* model (``-1``: the last layer, after the final norm), the features
and the policy are

.. math::

    \phi(s, c) = \mathrm{concat}_{\ell \in L}\, h_\ell(x(s, c)) \in \mathbb{R}^d, \qquad
    z(s, c) = \frac{\phi(s, c) - \mu}{\sigma \sqrt{d}},

.. math::

    \pi_w(c \mid s) = \frac{\exp(w^\top z(s, c))}{\sum_{c' \in C_t} \exp(w^\top z(s, c'))}.

The :math:`1/\sqrt{d}` keeps :math:`\lVert z\rVert \approx 1` for standardised features, so a
gradient step of size :math:`\eta` moves the logits by about :math:`\eta` whatever :math:`d`
(:mod:`smcplan.train.head_objective`).  Only :math:`w` is learned
(:mod:`smcplan.train.grpo_mr_head`); :math:`\mu, \sigma` are fixed when the head is made.

**Features** (:func:`candidate_features`): the candidates of one state share the prompt's
tokens up to their answers, so the shared token prefix is run once and its key/value cache is
copied to one row per candidate; only the few answer tokens run per candidate (the same function
as one forward pass per candidate, up to float rounding).  :class:`FeatureCache` keeps each
(state, candidate) text's features, so the :math:`G` episodes of a group, which share their
first states, and later iterations reuse them.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import write_json

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel, Prompt

__all__ = [
    "POLICY_FILE",
    "INSTRUCTION",
    "NOTE_LABEL",
    "CONTEXTS",
    "state_text",
    "candidate_text",
    "candidate_pairs",
    "state_prompt",
    "PolicyHead",
    "is_policy_head",
    "candidate_features",
    "FeatureCache",
    "LMFeatures",
    "log_softmax",
    "sample_index",
]

#: the file that marks a folder as a policy head (its arrays sit beside it in ``.npz``)
POLICY_FILE = "policy_head.json"
_ARRAYS = "policy_head.npz"

#: the label of a candidate's note line (:func:`candidate_text`; the critic's prompt says it so)
NOTE_LABEL = "What the agent's map says: "

#: the request after the state text in the user turn
INSTRUCTION = (
    "Answer with one meta-reasoning tag (planning, explore, reflection or monitor) and one "
    "admissible action, as 'tag: action'."
)


#: what the state text holds: ``"full"`` (the task, tried actions, recent steps, observation)
#: or ``"task"`` (the task alone: the state reaches the features only through the candidates'
#: map notes, so a candidate's features depend on its text alone and are computed once)
CONTEXTS = ("full", "task")


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def state_text(
    task: str,
    steps: Sequence[tuple[str, str, str]],
    observation: str,
    recent: int = 3,
    max_chars: int = 300,
    context: str = "full",
) -> str:
    """The state :math:`s_t` the head reads: ``task``, the distinct actions tried so far (in the
    order first tried), the last ``recent`` steps ``(tag, action, observation after it)`` and the
    current ``observation``, each observation cut to ``max_chars`` characters; ``context=
    "task"``: the task line alone (:data:`CONTEXTS`).  Pure."""
    check_int(recent, "recent", minimum=0)
    check_int(max_chars, "max_chars", minimum=8)
    if context not in CONTEXTS:
        raise InvalidArgumentError(
            f"context={context!r}: give one of {', '.join(CONTEXTS)} (task: the task line alone)"
        )
    if context == "task":
        return f"Task: {_short(task, max_chars)}"
    tried = list(dict.fromkeys(a for _, a, _ in steps))
    lines = [f"Task: {_short(task, max_chars)}"]
    lines.append("Actions tried: " + (", ".join(tried) if tried else "none"))
    for tag, action, after in list(steps)[len(steps) - recent :] if recent else []:
        lines.append(f"> {tag}: {action}\n{_short(after, max_chars)}")
    lines.append(f"Now: {_short(observation, max_chars)}")
    return "\n".join(lines)


def candidate_text(tag: str, action: str, note: str = "") -> str:
    """The answer text of candidate ``(tag, action)``: ``"tag: action"``, and with a ``note``
    (what the agent's place map says about the action: a plain string the caller computes,
    e.g. :func:`smcplan.agents.map_notes.action_note`) a second line :data:`NOTE_LABEL` +
    ``note``, so the features are read after it.  An empty note leaves the text unchanged."""
    return f"{tag}: {action}\n{NOTE_LABEL}{note}" if note else f"{tag}: {action}"


def candidate_pairs(tags: Sequence[str], admissible: Sequence[str]) -> list[tuple[str, str]]:
    """:math:`C_t = G \\times A_t`, tag-major (``admissible`` de-duplicated, order kept)."""
    actions = list(dict.fromkeys(admissible))
    if not tags or not actions:
        raise InvalidArgumentError(
            f"candidates need at least one tag and one admissible action; got {list(tags)!r} "
            f"and {list(admissible)!r}"
        )
    return [(g, a) for g in tags for a in actions]


def state_prompt(state: str) -> list[dict[str, str]]:
    """The chat prompt of a state: one user turn, ``state`` then :data:`INSTRUCTION`."""
    return [{"role": "user", "content": f"{state}\n{INSTRUCTION}"}]


def log_softmax(x: np.ndarray) -> np.ndarray:
    """:math:`x_i - \\log\\sum_j e^{x_j}` of a 1-D array, computed stably."""
    x = np.asarray(x, dtype=np.float64)
    m = float(np.max(x))
    return x - (m + np.log(np.sum(np.exp(x - m))))


def sample_index(logp: np.ndarray, rng: np.random.Generator, temperature: float = 1.0) -> int:
    """A draw from :math:`p \\propto e^{\\log p / T}` with ``rng`` (``T = 0``: the argmax, the
    first on ties)."""
    if temperature == 0:
        return int(np.argmax(logp))
    z = np.asarray(logp, np.float64) / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def is_policy_head(folder: str | os.PathLike[str] | None) -> bool:
    """Whether ``folder`` holds a :class:`PolicyHead` (``policy_head.json``)."""
    return folder is not None and (Path(folder) / POLICY_FILE).is_file()


@dataclass
class PolicyHead:
    """:math:`\\pi_w(c|s) \\propto \\exp(w^\\top (\\phi - \\mu)/(\\sigma\\sqrt{d}))` (module
    docstring).  ``layers``: the hidden-state indices the features concatenate (empty: a
    feature map that is not a language model's, e.g. a test's); ``tags``: the tags the
    candidates range over; ``info``: what the trainer recorded."""

    layers: tuple[int, ...]
    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    tags: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.layers = tuple(int(x) for x in self.layers)
        self.tags = tuple(str(t) for t in self.tags)
        if not self.tags or len(set(self.tags)) != len(self.tags):
            raise InvalidArgumentError(f"tags: {self.tags!r}; give distinct tags, at least one")
        self.mean, self.scale, self.weight = (
            np.asarray(a, dtype=np.float64).reshape(-1)
            for a in (self.mean, self.scale, self.weight)
        )
        sizes = (self.mean.size, self.scale.size, self.weight.size)
        if len(set(sizes)) != 1 or sizes[0] == 0:
            raise InvalidArgumentError(
                f"policy head: mean, scale and weight sizes {sizes}; they must be equal and > 0"
            )
        if not np.all(self.scale > 0) or not np.all(np.isfinite(self.weight)):
            raise InvalidArgumentError(
                "policy head: scale must be positive and weight finite; refit the head"
            )

    @property
    def dim(self) -> int:
        return int(self.weight.size)

    @classmethod
    def uniform(
        cls, dim: int, tags: Sequence[str], layers: Sequence[int] = (), **info: Any
    ) -> PolicyHead:
        """The head with :math:`w = 0` (every candidate equally likely), :math:`\\mu = 0,
        \\sigma = 1`."""
        check_int(dim, "dim", minimum=1)
        return cls(tuple(layers), np.zeros(dim), np.ones(dim), np.zeros(dim), tuple(tags), info)

    def with_weight(self, weight: np.ndarray, **info: Any) -> PolicyHead:
        """The same head (standardisation, tags) with ``weight``; ``info`` updated."""
        return PolicyHead(
            self.layers, self.mean, self.scale, weight, self.tags, {**self.info, **info}
        )

    def standardise(self, features: np.ndarray) -> np.ndarray:
        """:math:`z = (\\phi - \\mu)/(\\sigma\\sqrt{d})` of each row of ``features`` (n, d)."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise InvalidArgumentError(
                f"features: shape {x.shape}, the head reads (n, {self.dim}); extract them with "
                f"the head's layers {list(self.layers)} from the model it was made on"
            )
        return (x - self.mean) / (self.scale * np.sqrt(self.dim))

    def log_probs(self, features: np.ndarray) -> np.ndarray:
        """:math:`\\log \\pi_w(c|s)` of the candidates whose features are the rows."""
        return log_softmax(self.standardise(features) @ self.weight)

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """``folder/policy_head.json`` (layers, tags, info; written last, atomically) and
        ``folder/policy_head.npz``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{_ARRAYS}.tmp.npz"
        np.savez(tmp, mean=self.mean, scale=self.scale, weight=self.weight)
        os.replace(tmp, folder / _ARRAYS)
        meta = {"layers": list(self.layers), "tags": list(self.tags), "dim": self.dim}
        write_json(folder / POLICY_FILE, {**meta, "info": self.info})
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> PolicyHead:
        """The head saved in ``folder`` by :meth:`save`."""
        folder = Path(folder)
        if not is_policy_head(folder) or not (folder / _ARRAYS).is_file():
            raise InvalidArgumentError(
                f"{os.fspath(folder)!r} is not a policy head folder (needs {POLICY_FILE} and "
                f"{_ARRAYS}); train one with smcplan train grpo-mr-head"
            )
        meta = json.loads((folder / POLICY_FILE).read_text(encoding="utf-8"))
        with np.load(folder / _ARRAYS) as z:
            return cls(
                tuple(meta["layers"]), z["mean"], z["scale"], z["weight"], tuple(meta["tags"]),
                dict(meta.get("info", {})),
            )  # fmt: skip


def _model_of(lm: Any, layers: Sequence[int]) -> Any:
    model = getattr(lm, "model", None)
    if model is None or not hasattr(model, "config") or not callable(model):
        raise InvalidArgumentError(
            f"policy-head features need an in-process transformers model (load_model()); got "
            f"{type(lm).__name__}: a remote or llama.cpp engine returns no hidden states"
        )
    depth = int(model.config.num_hidden_layers)
    if not layers:
        raise InvalidArgumentError("layers: empty; give at least one hidden-state index, e.g. -1")
    for layer in layers:
        if not -(depth + 1) <= int(layer) <= depth:
            raise InvalidArgumentError(
                f"layers: {layer} is outside the model's hidden states -{depth + 1}..{depth}"
            )
    return model


def candidate_features(
    lm: LanguageModel,
    prompt: Prompt,
    answers: Sequence[str],
    layers: Sequence[int] = (-1,),
    batch: int = 16,
) -> np.ndarray:
    """The hidden states of the last token of ``prompt`` + each answer (as the assistant's
    prefix), at ``layers``, concatenated: shape ``(len(answers), len(layers) * hidden)``,
    float64.  The answers' common token prefix runs once; its cache is copied to ``batch``
    rows at a time, each running its own remaining tokens (right-padded: a pad after a row's
    last token changes nothing before it)."""
    import torch
    from transformers import DynamicCache

    check_int(batch, "batch", minimum=1)
    model = _model_of(lm, layers)
    width = len(layers) * int(model.config.hidden_size)
    if not answers:
        return np.zeros((0, width))
    rows = [lm.encode_prompt(prompt, assistant_prefix=a) for a in answers]
    n = min(len(r) for r in rows) - 1
    for r in rows[1:]:
        n = min(n, next((i for i, (x, y) in enumerate(zip(rows[0], r)) if x != y), n))
    pad = int(getattr(lm, "pad_token_id", None) or 0)
    device = next(model.parameters()).device
    threading = getattr(lm, "_threading", contextlib.nullcontext)
    out = []
    with threading(), torch.inference_mode():
        shared = None
        if n > 0:
            res = model(input_ids=torch.tensor([rows[0][:n]], device=device), use_cache=True,
                        logits_to_keep=1)  # fmt: skip
            shared = [(k, v) for k, v, *_ in res.cache]
        for i in range(0, len(rows), batch):
            part = [r[n:] for r in rows[i : i + batch]]
            b, w = len(part), max(len(r) for r in part)
            ids = torch.full((b, w), pad, dtype=torch.long)
            mask = torch.zeros((b, n + w), dtype=torch.long)
            mask[:, :n] = 1
            for j, r in enumerate(part):
                ids[j, : len(r)] = torch.tensor(r)
                mask[j, n : n + len(r)] = 1
            cache = DynamicCache(config=model.config)
            if shared is not None:
                data = [(k.expand(b, -1, -1, -1).contiguous(), v.expand(b, -1, -1, -1).contiguous())
                        for k, v in shared]  # fmt: skip
                cache = DynamicCache(ddp_cache_data=data, config=model.config)
            res = model(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                position_ids=(n + torch.arange(w))[None, :].expand(b, -1).to(device),
                cache=cache,
                use_cache=True,
                output_hidden_states=True,
                logits_to_keep=1,
            )
            last = torch.tensor([len(r) - 1 for r in part], device=device)
            picked = [res.hidden_states[int(x)][torch.arange(b), last] for x in layers]
            out.append(torch.cat(picked, dim=-1).float().cpu().numpy().astype(np.float64))
    return np.concatenate(out, axis=0)


class FeatureCache:
    """Features by (featurizer, state, candidate) text, at most ``max_entries`` (the oldest
    dropped first, so its content is a deterministic function of the calls made); stored as
    float32 in memory and in :meth:`save`'s ``.npz``."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = check_int(max_entries, "max_entries", minimum=1)
        self.rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(name: str, state: str, candidate: str) -> str:
        return hashlib.sha256(f"{name}\0{state}\0{candidate}".encode()).hexdigest()[:32]

    def lookup(
        self,
        name: str,
        state: str,
        candidates: Sequence[str],
        compute: Callable[[list[int]], np.ndarray],
    ) -> np.ndarray:
        """The rows of ``candidates`` after ``state``; ``compute(missing indices)`` gives the
        rows not cached yet (in that order), which are then stored."""
        keys = [self.key(name, state, c) for c in candidates]
        missing = [i for i, k in enumerate(keys) if k not in self.rows]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        fresh = compute(missing) if missing else None
        got: dict[int, np.ndarray] = {}
        for j, i in enumerate(missing):
            got[i] = np.asarray(fresh[j], dtype=np.float32)
            self.rows[keys[i]] = got[i]
        # read this call's rows before dropping the oldest entries: a full cache may drop a
        # row this very call hit (a KeyError after 50,000 entries, in a 16-iteration run)
        rows = [got[i] if i in got else self.rows[k] for i, k in enumerate(keys)]
        while len(self.rows) > self.max_entries:
            self.rows.popitem(last=False)
        return np.stack(rows).astype(np.float64)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every entry to ``path`` (``.npz``, atomically: a temporary file, renamed)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp.npz")
        keys = np.asarray(list(self.rows), dtype="U32")
        rows = np.stack(list(self.rows.values())) if self.rows else np.zeros((0, 0), np.float32)
        np.savez(tmp, keys=keys, rows=rows)
        os.replace(tmp, path)

    def load(self, path: str | os.PathLike[str]) -> FeatureCache:
        """Replace the entries by those saved in ``path``; returns ``self``."""
        with np.load(path) as z:
            self.rows = OrderedDict(zip(z["keys"].tolist(), list(z["rows"]), strict=True))
        return self


class LMFeatures:
    """:math:`\\phi(s, c)` on a frozen model: ``features(state, pairs, notes=None) ->
    (len(pairs), dim)`` for ``pairs`` of (tag, action) (``notes``: one per pair, see
    :func:`candidate_text`), through :func:`candidate_features` and a :class:`FeatureCache`.
    ``layers`` default: the last layer and the middle one."""

    def __init__(
        self,
        lm: LanguageModel,
        layers: Sequence[int] | None = None,
        cache: FeatureCache | None = None,
        batch: int = 16,
    ) -> None:
        depth = int(_model_of(lm, layers or (-1,)).config.num_hidden_layers)
        self.layers = tuple(layers) if layers else (-1, depth // 2)
        self.model = _model_of(lm, self.layers)
        self.lm, self.batch = lm, check_int(batch, "batch", minimum=1)
        self.cache = cache if cache is not None else FeatureCache()
        self.dim = len(self.layers) * int(self.model.config.hidden_size)
        self.name = f"lm:{getattr(lm, 'name', '?')}:{list(self.layers)}"

    def __call__(
        self, state: str, pairs: Sequence[tuple[str, str]], notes: Sequence[str] | None = None
    ) -> np.ndarray:
        """The features of ``pairs`` after ``state``; ``notes``: one per pair (its action's
        note, :func:`candidate_text`), or ``None``: no notes."""
        if notes is not None and len(notes) != len(pairs):
            raise InvalidArgumentError(
                f"notes: {len(notes)} for {len(pairs)} candidates; give one note per candidate"
            )
        notes = [""] * len(pairs) if notes is None else notes
        texts = [candidate_text(g, a, n) for (g, a), n in zip(pairs, notes, strict=True)]
        prompt = state_prompt(state)

        def compute(missing: list[int]) -> np.ndarray:
            return candidate_features(
                self.lm, prompt, [texts[i] for i in missing], self.layers, self.batch
            )

        return self.cache.lookup(self.name, state, texts, compute)
