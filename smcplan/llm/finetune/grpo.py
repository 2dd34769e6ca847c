r"""The torch half of GRPO-MR: a clipped, KL-regularised policy update on a PEFT (LoRA) model.

Why not TRL's ``GRPOTrainer`` (trl 1.16.0, read in ``trl/trainer/grpo_trainer.py``): its
advantages are computed inside ``_generate_and_score_completions`` as one scalar per completion,
normalised over the ``num_generations`` completions *of the same prompt*; ``_compute_loss``
accepts ``(B, T)`` advantages only from a subclass.  A GRPO-MR group is G multi-turn
trajectories of one task, and each *step* is its own completion with its own prompt (the
history differs from step to step and from trajectory to trajectory), so there are no G
completions of one prompt to group, and the step-level advantage (outcome term + tag-group
term, :mod:`smcplan.train.grpo_mr`) has to be computed over trajectories outside the trainer.
``rollout_func`` / ``environment_factory`` run a multi-turn episode as *one* completion with one
reward, which cannot carry per-step advantages either.  Hence this small loop on PEFT.

The objective (PPO's clipped surrogate as GRPO uses it, DeepSeekMath eq. 3, with the
advantage of step :math:`(i, t)` broadcast to the tokens :math:`k` of that step's answer):

.. math::

    \rho_k = \exp(\log\pi_\theta(y_k) - \log\pi_{\mathrm{old}}(y_k)),\qquad
    \ell_k = -\min\big(\rho_k A,\ \mathrm{clip}(\rho_k, 1-\epsilon, 1+\epsilon) A\big)
             + \beta\, \mathrm{KL}_k,

    \mathrm{KL}_k = e^{\log\pi_{\mathrm{ref}} - \log\pi_\theta}
                    - (\log\pi_{\mathrm{ref}} - \log\pi_\theta) - 1

(Schulman's k3 estimator, verl's ``low_var_kl``), and the loss is the mean of :math:`\ell_k`
over all answer tokens of the minibatch (verl's ``token-mean``).  The reference policy is the
cold-start policy: its adapter loaded a second time, frozen (``reference="adapter"``), or the
base model with the adapter switched off when training starts from a fresh LoRA.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from smcplan.errors import check_float, check_int
from smcplan.llm.finetune.lora import FinetuneError, LoraSettings, require

if TYPE_CHECKING:
    from smcplan.llm.backends.hf import TransformersLanguageModel

__all__ = ["PolicySettings", "UpdateStats", "clipped_kl_loss", "PolicyOptimizer"]


@dataclass(frozen=True)
class PolicySettings:
    """AdamW ``learning_rate`` and ``weight_decay``; PPO clip ``clip_eps``; KL weight
    ``kl_coef`` (verl-agent's ``kl_loss_coef`` default 0.01); ``epochs`` of updates per batch of
    rollouts; ``minibatch_size`` answers per optimizer step; gradient-norm clip
    ``max_grad_norm``."""

    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    clip_eps: float = 0.2
    kl_coef: float = 0.01
    epochs: int = 1
    minibatch_size: int = 8
    max_grad_norm: float = 1.0
    seed: int = 0

    def validated(self) -> PolicySettings:
        check_float(self.learning_rate, "learning_rate", minimum=0.0, min_inclusive=False)
        check_float(self.weight_decay, "weight_decay", minimum=0.0)
        check_float(self.clip_eps, "clip_eps", minimum=0.0, maximum=1.0, min_inclusive=False)
        check_float(self.kl_coef, "kl_coef", minimum=0.0)
        check_int(self.epochs, "epochs", minimum=1)
        check_int(self.minibatch_size, "minibatch_size", minimum=1)
        check_float(self.max_grad_norm, "max_grad_norm", minimum=0.0, min_inclusive=False)
        check_int(self.seed, "seed", minimum=0)
        return self


@dataclass
class UpdateStats:
    """Per update: optimizer ``steps``, mean ``loss`` / ``kl`` / clipped fraction over them, and
    the answer tokens seen."""

    steps: int
    loss: float
    kl: float
    clip_fraction: float
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clipped_kl_loss(
    logp: Any,
    old_logp: Any,
    ref_logp: Any,
    advantages: Any,
    mask: Any,
    clip_eps: float,
    kl_coef: float,
) -> tuple[Any, dict[str, float]]:
    """The token-mean loss of the module docstring for ``(B, T)`` tensors (``mask``: 1 on answer
    tokens), with ``advantages`` of shape ``(B,)`` or ``(B, T)``; returns ``(loss, stats)``."""
    import torch

    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(1)
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    delta = ref_logp - logp
    kl = torch.exp(delta) - delta - 1
    per_token = -surrogate + kl_coef * kl
    n = mask.sum().clamp(min=1)
    loss = (per_token * mask).sum() / n
    clipped = ((ratio - 1).abs() > clip_eps).float()
    stats = {
        "kl": float((kl.detach() * mask).sum() / n),
        "clip_fraction": float((clipped * mask).sum() / n),
    }
    return loss, stats


class PolicyOptimizer:
    """A trainable LoRA policy inside a :class:`smcplan.llm.LanguageModel` (so rollouts and
    updates use the same weights and the same prompt rendering).

    ``lm``: its prefix cache (if on) is emptied after every update, since cached key/values go
    stale when the weights change (within one rollout phase the weights are fixed, so the cache
    is valid there); its transformers model is wrapped in place: with ``adapter`` (a
    cold-start adapter folder) that adapter becomes trainable and a frozen copy named
    ``"reference"`` is the KL reference; with ``adapter=None`` a fresh LoRA (``lora``) is
    trained and the reference is the base model.
    """

    def __init__(
        self,
        lm: TransformersLanguageModel,
        adapter: str | os.PathLike[str] | None = None,
        settings: PolicySettings | None = None,
        lora: LoraSettings | None = None,
    ) -> None:
        require("peft")
        import torch
        from peft import PeftModel, get_peft_model

        from smcplan.llm.finetune.lora import lora_config

        self.settings = (settings or PolicySettings()).validated()
        torch.manual_seed(self.settings.seed)
        base = lm.model
        if adapter is not None:
            model = PeftModel.from_pretrained(base, os.fspath(adapter), is_trainable=True)
            model.load_adapter(os.fspath(adapter), adapter_name="reference", is_trainable=False)
            model.set_adapter("default")
            self.reference = "adapter"
        else:
            lora = lora or LoraSettings(dropout=0.0)
            model = get_peft_model(base, lora_config(lora))
            self.reference = "base"
        for name, p in model.named_parameters():
            if ".reference." in name:
                p.requires_grad_(False)
        model.eval()  # no dropout: the ratio compares the same function at two parameters
        lm.model = model
        self.lm, self.model = lm, model
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=self.settings.learning_rate, weight_decay=self.settings.weight_decay
        )

    # -------------------------------------------------------------------- log-probabilities
    def _batch(self, prompts: Sequence[Any], completions: Sequence[str]) -> tuple[Any, ...]:
        import torch

        rows, starts = [], []
        for p, c in zip(prompts, completions, strict=True):
            head = self.lm.encode_prompt(p)
            tail = self.lm.encode_continuation(c, add_eos=True)
            rows.append(head + tail)
            starts.append(len(head))
        width = max(len(r) for r in rows)
        pad = self.lm.pad_token_id if self.lm.pad_token_id is not None else 0
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width - 1))
        for i, (r, s) in enumerate(zip(rows, starts, strict=True)):
            ids[i, : len(r)] = torch.tensor(r)
            attention[i, : len(r)] = 1
            mask[i, s - 1 : len(r) - 1] = 1.0  # position k predicts token k + 1
        return ids.to(self.lm.device), attention.to(self.lm.device), mask.to(self.lm.device)

    def _token_logp(self, ids: Any, attention: Any) -> Any:
        import torch

        logits = self.model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        return torch.gather(torch.log_softmax(logits, -1), 2, ids[:, 1:].unsqueeze(-1))[..., 0]

    def _reference_logp(self, ids: Any, attention: Any) -> Any:
        import torch

        with torch.no_grad():
            if self.reference == "adapter":
                self.model.set_adapter("reference")
                try:
                    return self._token_logp(ids, attention)
                finally:
                    self.model.set_adapter("default")
                    for name, p in self.model.named_parameters():  # set_adapter re-enables grads
                        p.requires_grad_(".default." in name and "lora_" in name)
            with self.model.disable_adapter():
                return self._token_logp(ids, attention)

    def sequence_logprobs(self, prompts: Sequence[Any], completions: Sequence[str]) -> list[float]:
        """:math:`\\log\\pi_\\theta(y \\mid x)` of each answer (end of turn included)."""
        import torch

        ids, attention, mask = self._batch(prompts, completions)
        with torch.no_grad():
            logp = self._token_logp(ids, attention)
        return [float(v) for v in (logp * mask).sum(1)]

    # -------------------------------------------------------------------- the update
    def update(
        self, prompts: Sequence[Any], completions: Sequence[str], advantages: Sequence[float]
    ) -> UpdateStats:
        """``epochs`` passes of clipped, KL-regularised updates over the answers (module doc);
        :math:`\\pi_{\\mathrm{old}}` is the policy before this call."""
        import torch

        s = self.settings
        n = len(prompts)
        if not n or len(completions) != n or len(advantages) != n:
            raise FinetuneError(
                f"update needs equally many prompts, completions and advantages (>= 1); got "
                f"{len(prompts)}, {len(completions)}, {len(advantages)}"
            )
        batches = []
        for i in range(0, n, s.minibatch_size):
            ids, attention, mask = self._batch(
                prompts[i : i + s.minibatch_size], completions[i : i + s.minibatch_size]
            )
            with torch.no_grad():
                old = self._token_logp(ids, attention)
            ref = self._reference_logp(ids, attention)
            adv = torch.tensor(list(advantages[i : i + s.minibatch_size]), device=ids.device)
            batches.append((ids, attention, mask, old, ref, adv))
        losses, kls, clips, steps = [], [], [], 0
        for _ in range(s.epochs):
            for ids, attention, mask, old, ref, adv in batches:
                logp = self._token_logp(ids, attention)
                loss, stats = clipped_kl_loss(logp, old, ref, adv, mask, s.clip_eps, s.kl_coef)
                self.optimizer.zero_grad()
                loss.backward()
                params = [p for p in self.model.parameters() if p.requires_grad]
                torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm)
                self.optimizer.step()
                losses.append(float(loss.detach()))
                kls.append(stats["kl"])
                clips.append(stats["clip_fraction"])
                steps += 1
        if getattr(self.lm, "prefix_cache", None) is not None:
            self.lm.prefix_cache.clear()  # the key/values of the old weights are stale
        tokens = int(sum(float(b[2].sum()) for b in batches))
        return UpdateStats(steps, sum(losses) / steps, sum(kls) / steps, sum(clips) / steps, tokens)

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the trained adapter (only ``"default"``) to ``path``."""
        os.makedirs(path, exist_ok=True)
        self.model.save_pretrained(os.fspath(path), selected_adapters=["default"])
        return os.fspath(path)
