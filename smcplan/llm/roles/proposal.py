"""Action roles: a proposal over the admissible set by exact log-prob scoring (NeSyFS, RLAW actor).

Given a prompt ``x`` (and optionally a sampled thought ``z`` written into the answer prefix), each
admissible action ``a_k`` is scored as a complete answer,

    s_k = log p(a_k · suffix · EOS | x, z),

and the action is drawn from ``q(a_k) = softmax(s / T)_k`` (``T = 0``: argmax, ``q = 1``). The
chosen action is always admissible, ``logq`` is its exact proposal log-probability and ``logp =
log softmax(s)_k`` the model's own probability of it restricted to the admissible set, the two
quantities a twisted SMC weight needs (p/q). All particles' (prompt, action) pairs are scored in
one :meth:`~smcplan.llm.LanguageModel.logprob` call, which runs each distinct prompt once and
reuses its KV cache for all its actions. Ending each answer with EOS makes prefixes ("take coin"
vs "take coin from table") compete fairly.

With ``free=True`` the action is instead *written* after the same prefix, constrained only by
the benchmark's command verbs (:func:`smcplan.llm.roles.free_action.generate_actions`), so it
may be inadmissible; ``logq`` is then the constrained sampler's log-probability of the text,
``logp`` the model's, and ``log_probs`` is empty.

With ``think=True`` a thought is first sampled for every particle in one batched call, constrained
by the role's ``thought_regex`` and cut at ``thought_max_new_tokens`` (``role.json``). The
proposal's thought is one line, as in ReAct (Yao et al. 2023): it ends at the model's first line
break (which the grammar then closes), not at the token cap; its
log-probability is reported as ``thought_logq`` (q of the thought, an auxiliary variable of the
proposal).

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from smcplan.llm.roles.base import Role, check_lengths

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

__all__ = ["ActionProposal", "Proposal", "RLAWActor", "ActorOutput", "choose"]


@dataclass
class Proposal:
    """A proposed action: ``action`` ∈ admissible (any written text with ``free=True``),
    ``logq`` its proposal log-probability, ``logp`` its model log-probability normalised over the
    admissible set (free: of the written text), ``thought`` (may be empty), ``thought_logq`` (0
    without thinking) and ``log_probs``: log softmax(s) per action (free: empty)."""

    action: str
    logq: float
    logp: float
    thought: str
    thought_logq: float
    log_probs: list[float]


def choose(
    lm: LanguageModel,
    prompts: Sequence[list[dict[str, str]]],
    prefixes: Sequence[str],
    admissible: Sequence[Sequence[str]],
    temperature: float,
    seed: int | None,
    suffix: str = "",
    escape_json: bool = False,
) -> list[tuple[int, float, float, np.ndarray]]:
    """Score every admissible action of every particle in one call and draw one per particle.

    Returns per particle ``(index, logq, logp, log_probs)``; see the module docstring.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0; got {temperature}")
    for i, acts in enumerate(admissible):
        if isinstance(acts, str) or len(acts) == 0:
            raise ValueError(
                f"particle {i}: admissible actions must be a non-empty list of strings; got "
                f"{acts!r}"
            )
    rows_p, rows_a, rows_c = [], [], []
    for p, a, acts in zip(prompts, prefixes, admissible, strict=True):
        for act in acts:
            text = json.dumps(act, ensure_ascii=False)[1:-1] if escape_json else act
            rows_p.append(p)
            rows_a.append(a)
            rows_c.append(text + suffix)
    scores = lm.logprob(rows_p, rows_c, add_eos=True, assistant_prefix=rows_a)
    rng = np.random.default_rng(lm.derive_seed(seed))
    out = []
    start = 0
    for acts in admissible:
        s = scores[start : start + len(acts)]
        start += len(acts)
        log_probs = s - np.logaddexp.reduce(s)
        if temperature == 0:
            k = int(np.argmax(s))
            logq = 0.0
        else:
            z = s / temperature
            log_q = z - np.logaddexp.reduce(z)
            k = int(rng.choice(len(acts), p=np.exp(log_q - np.logaddexp.reduce(log_q))))
            logq = float(log_q[k])
        out.append((k, logq, float(log_probs[k]), log_probs))
    return out


def _thoughts(lm, assets, prompts, prefixes, temperature, seed) -> tuple[list[str], list[float]]:
    from outlines.types import Regex

    samples = lm.sample(
        prompts,
        Regex(assets.settings["thought_regex"]),
        temperature=temperature,
        max_new_tokens=assets.settings["thought_max_new_tokens"],
        seed=seed,
        assistant_prefix=prefixes,
    )
    # a thought may end with a newline (then the grammar allows only end-of-sequence): the
    # line break is where "Action: ..." begins, and the prefix template writes it itself
    texts = [s[0].text[:-1] if s[0].text.endswith("\n") else s[0].text for s in samples]
    return texts, [s[0].logq for s in samples]


class ActionProposal(Role):
    """``proposal(tasks, triplets, observations, admissible) -> [Proposal per particle]``.

    ``temperature`` tempers the choice over the admissible set (1 = the model's own
    distribution, 0 = greedy); ``think`` samples a one-sentence thought first. ``free`` writes
    the action instead (module docstring) within ``action_tokens`` tokens, under the command
    verbs passed to the call as ``verbs`` (``None``: any one-line text).
    """

    asset_name = "proposal"

    def __init__(
        self,
        lm: LanguageModel,
        temperature: float = 1.0,
        think: bool = False,
        thought_temperature: float = 1.0,
        free: bool = False,
        action_tokens: int = 24,
        **kwargs,
    ) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature
        self.think = think
        self.thought_temperature = thought_temperature
        self.free = bool(free)
        self.action_tokens = int(action_tokens)

    def __call__(
        self,
        tasks: Sequence[str],
        triplets: Sequence[Sequence[tuple[str, str, str]]],
        observations: Sequence[str],
        admissible: Sequence[Sequence[str]],
        seed: int | None = None,
        verbs: Sequence[str] | None = None,
    ) -> list[Proposal]:
        size = check_lengths(
            "ActionProposal",
            tasks=tasks,
            triplets=triplets,
            observations=observations,
            admissible=admissible,
        )
        if size == 0:
            return []
        seed = self.lm.derive_seed(seed)
        prompts = [
            self.assets.messages(
                task=t,
                triplets=[tuple(x) for x in kg],
                observation=o,
                admissible=list(a),
                think=self.think,
            )
            for t, kg, o, a in zip(tasks, triplets, observations, admissible, strict=True)
        ]
        thoughts, thought_logq = [""] * size, [0.0] * size
        if self.think:
            first = [self.assets.prefix(think=True, thought=None)] * size
            thoughts, thought_logq = _thoughts(
                self.lm, self.assets, prompts, first, self.thought_temperature, seed
            )
        prefixes = [self.assets.prefix(think=self.think, thought=z) for z in thoughts]
        if self.free:
            from smcplan.llm.roles.free_action import generate_actions

            written = generate_actions(
                self.lm, prompts, prefixes, verbs,
                suffix=self.assets.settings.get("action_suffix", ""),
                temperature=self.temperature, max_new_tokens=self.action_tokens, seed=seed + 1,
            )
            return [
                Proposal(w.text, w.logq, w.logp, z, zq, [])
                for w, z, zq in zip(written, thoughts, thought_logq, strict=True)
            ]
        picks = choose(
            self.lm,
            prompts,
            prefixes,
            admissible,
            self.temperature,
            seed + 1,
            self.assets.settings.get("action_suffix", ""),
        )
        return [
            Proposal(a[k], logq, logp, z, zq, lp.tolist())
            for a, (k, logq, logp, lp), z, zq in zip(
                admissible, picks, thoughts, thought_logq, strict=True
            )
        ]


@dataclass
class ActorOutput:
    """The RLAW actor's answer: ``thought``, ``action`` ∈ admissible, and the proposal log-probs."""

    thought: str
    action: str
    logq: float
    logp: float
    thought_logq: float

    def as_json(self) -> dict[str, str]:
        """The JSON object the actor answers with: ``{"thought": ..., "action": ...}``."""
        return {"thought": self.thought, "action": self.action}

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class RLAWActor(Role):
    """RLAW actor: ``actor(tasks, contexts, admissible, critiques=None) -> [ActorOutput]``.

    The answer is the JSON ``{"thought": "...", "action": "..."}``: the thought is sampled under a
    JSON-safe regex, then the action is chosen over the admissible set by scoring
    ``action"}`` + EOS after ``{"thought": "<thought>", "action": "`` (module docstring).
    ``critiques`` (one per particle or ``None``) feed back the critic's reason for a retry.
    """

    asset_name = "rlaw_actor"

    def __init__(
        self,
        lm: LanguageModel,
        temperature: float = 1.0,
        thought_temperature: float = 1.0,
        **kwargs,
    ) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature
        self.thought_temperature = thought_temperature

    def __call__(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        admissible: Sequence[Sequence[str]],
        critiques: Sequence[str | None] | None = None,
        seed: int | None = None,
    ) -> list[ActorOutput]:
        size = check_lengths(
            "RLAWActor", tasks=tasks, contexts=contexts, admissible=admissible, critiques=critiques
        )
        if size == 0:
            return []
        seed = self.lm.derive_seed(seed)
        crit = list(critiques) if critiques is not None else [None] * size
        prompts = [
            self.assets.messages(task=t, context=c, admissible=list(a), critique=k)
            for t, c, a, k in zip(tasks, contexts, admissible, crit, strict=True)
        ]
        first = [self.assets.prefix(thought=None)] * size
        thoughts, thought_logq = _thoughts(
            self.lm, self.assets, prompts, first, self.thought_temperature, seed
        )
        prefixes = [self.assets.prefix(thought=z) for z in thoughts]
        picks = choose(
            self.lm,
            prompts,
            prefixes,
            admissible,
            self.temperature,
            seed + 1,
            self.assets.settings["action_suffix"],
            escape_json=True,
        )
        return [
            ActorOutput(z, a[k], logq, logp, zq)
            for a, (k, logq, logp, _), z, zq in zip(
                admissible, picks, thoughts, thought_logq, strict=True
            )
        ]
