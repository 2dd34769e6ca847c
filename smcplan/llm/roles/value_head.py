r"""A learned value of a text state: a logistic head on the frozen model's hidden state.

The state is what the planner's particle knows, rendered as the LM world model's context (task,
retrieved facts, latest observation: :func:`smcplan.planning.text_particle.render_context`),
shown in the ``value`` role's prompt (``models/roles/value/``) and followed by the answer's
opening :data:`VALUE_PREFIX`.  With :math:`z(x)` the standardised hidden state of the last token
(:func:`~smcplan.llm.roles.score_head.hidden_features`, the critic head's features), the value is

.. math:: \hat V(x) = \sigma\big(w^\top z(x) + b\big) \in (0, 1),

where a head fitted with ``text_features`` (``info["text_features"]``) also reads three
benchmark-free text features after the hidden-state columns
(:mod:`smcplan.llm.roles.text_features`: how many of the task's words the observation and the
facts name, and the observation's length),

the head's probability that the task is completed within ``within`` k steps from :math:`x`
(:mod:`smcplan.train.value_head` says how it is labelled and fitted).  It is a
:class:`~smcplan.llm.roles.score_head.ScoreHead` whose ``info["role"]`` is ``"value"``, so a
critic head is not taken for a value head by mistake.  The model's weights are not changed.

Benchmark-free: it reads texts only.  Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.score_head import ScoreHead, hidden_features
from smcplan.llm.roles.text_features import VERSION as TEXT_FEATURES
from smcplan.llm.roles.text_features import text_features

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel, Prompt

__all__ = [
    "VALUE_PREFIX",
    "VALUE_ROLE",
    "check_hidden_states",
    "load_value_head",
    "value_prompts",
    "ValueModel",
]

#: the answer's opening: the head reads the hidden state of its last token
VALUE_PREFIX = "Estimate:"
#: ``ScoreHead.info["role"]`` of a value head
VALUE_ROLE = "value"


def check_hidden_states(lm: Any, who: str = "the value head") -> None:
    """Raise :class:`~smcplan.errors.InvalidArgumentError` unless ``lm`` is an in-process
    transformers model (``load_model()``), the only kind whose hidden states can be read."""
    model = getattr(lm, "model", None)
    if model is None or not hasattr(model, "config") or not callable(model):
        raise InvalidArgumentError(
            f"{who} reads the model's hidden states; got lm={type(lm).__name__}, which has none "
            "(a remote or llama.cpp engine). Load the model in process: smcplan.llm.load_model()"
        )


def load_value_head(folder: str | os.PathLike[str]) -> ScoreHead:
    """The value head in ``folder`` (``smcplan train value-head --out DIR``: ``DIR/head``);
    a score head fitted for another role (a critic head) is refused."""
    head = ScoreHead.load(folder)
    role = head.info.get("role")
    if role != VALUE_ROLE:
        raise InvalidArgumentError(
            f"value_head={os.fspath(folder)!r} is a score head for role {role!r}, not a value "
            "head; train one with `smcplan train value-head` and pass its DIR/head"
        )
    _check_text_features(head, f"value_head={os.fspath(folder)!r}")
    return head


def _check_text_features(head: ScoreHead, who: str) -> None:
    extra = head.info.get("text_features")
    if extra and extra != TEXT_FEATURES:
        raise InvalidArgumentError(
            f"{who} reads text features {extra!r}; this smcplan computes {TEXT_FEATURES!r}: "
            "refit it with `smcplan train value-head --opt text_features=true`"
        )


def value_prompts(contexts: Sequence[str]) -> list[Prompt]:
    """The ``value`` role's chat messages for each rendered state."""
    from smcplan.llm.templates import load_role

    role = load_role("value")
    return [role.messages(context=str(c)) for c in contexts]


#: states a forward pass scores: the planner's siblings share the task and the root page, which
#: :func:`~smcplan.llm.roles.score_head.hidden_features` then runs once (``share_prefix``)
SHARED_BATCH = 32


class ValueModel:
    """``model(contexts) -> values`` in (0, 1), shape ``(len(contexts),)``: the value head's
    :math:`\\hat V` of each rendered state on ``lm``'s hidden states (module docstring).
    Deterministic; ``batch`` prompts a forward pass, their shared leading tokens run once."""

    def __init__(
        self,
        lm: LanguageModel,
        head: ScoreHead | str | os.PathLike[str],
        batch: int = SHARED_BATCH,
    ) -> None:
        check_hidden_states(lm)
        self.lm = lm
        self.head = head if isinstance(head, ScoreHead) else load_value_head(head)
        if self.head.info.get("role") != VALUE_ROLE:
            raise InvalidArgumentError(
                f"head: info role {self.head.info.get('role')!r}, not {VALUE_ROLE!r}; fit it "
                "with smcplan.train.value_head (a critic head scores actions, not states)"
            )
        _check_text_features(self.head, "head")
        self.batch = batch

    def __call__(self, contexts: Sequence[str]) -> np.ndarray:
        if isinstance(contexts, str):
            raise InvalidArgumentError(
                "contexts must be a list of rendered states, not one string; wrap it: [text]"
            )
        if not contexts:
            return np.zeros((0,))
        feats = np.concatenate(
            [
                hidden_features(
                    self.lm,
                    value_prompts(contexts[i : i + self.batch]),
                    self.head.layers,
                    VALUE_PREFIX,
                    self.batch,
                    share_prefix=True,
                )  # fmt: skip
                for i in range(0, len(contexts), self.batch)
            ]
        )
        if self.head.info.get("text_features"):
            feats = np.hstack([feats, text_features(contexts)])
        return self.head.probabilities(feats)
