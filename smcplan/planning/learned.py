"""The learned world model's language model: loaded once per folder, shared by all planners.

``world_model="learned"`` with ``world_model_path=PATH`` (:class:`~smcplan.planning.PlannerConfig`)
predicts observations with the model trained by ``smcplan train world-model``
(:mod:`smcplan.train.world_model`), through the same :class:`smcplan.llm.ObservationModel` role
and prompt as the LM world model.  ``PATH`` is a PEFT adapter folder (loaded onto the base model
its config records, then merged), a transformers folder (a merged or fully fine-tuned model), or
the name of a shipped artifact (``"twx-coin-world-model"``, :mod:`smcplan.llm.artifacts`).

A model trained with ``targets=["observation", "reward", "done"]`` (its folder's
``world_model.json``; :mod:`smcplan.llm.roles.world_outcome`) also writes the step's score
change and ending: :class:`OutcomeObservationModel` reads them off each reply, and
:func:`predicted_outcome` turns them into the particle's :class:`~smcplan.planning.outcome.Outcome`,
which the ``env`` twist reads as it reads the simulator's.  A folder without targets is read the
old way (observation only, the default :class:`Outcome`).

``progress="learned"`` with ``value_head=PATH`` (a folder written by ``smcplan train value-head``
or a shipped artifact's name) loads the value head once per folder (:func:`learned_value_model`).

Imports ``smcplan.llm`` lazily.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from smcplan.games import DEFAULT_WORLD_MODEL
from smcplan.planning.components import PlanningError
from smcplan.planning.outcome import Outcome

__all__ = [
    "learned_lm",
    "learned_observation_model",
    "learned_targets",
    "learned_value_model",
    "serves_env_twist",
    "OutcomeObservationModel",
    "predicted_outcome",
]


@functools.lru_cache(maxsize=4)
def _load(path: str, threads: int | None) -> Any:
    from smcplan.llm import load_model
    from smcplan.llm.finetune.lora import adapter_base, is_adapter

    if is_adapter(path):
        return load_model(adapter_base(path), adapter=path, threads=threads)
    if os.path.isdir(path):
        return load_model(path, threads=threads)
    raise PlanningError(
        f"world_model_path {path!r} is neither an adapter folder (adapter_config.json) nor a "
        "model folder; pass DIR/adapter of `smcplan train world-model --out DIR`"
    )


def learned_lm(path: str, threads: int | None = None) -> Any:
    """The :class:`smcplan.llm.LanguageModel` of the learned world model at ``path`` (a folder or
    a shipped artifact's name; cached)."""
    from smcplan.llm.artifacts import ArtifactError, resolve_artifact, trained_dir

    try:
        folder = resolve_artifact(path, "world_model_path")
    except ArtifactError as exc:
        if path != DEFAULT_WORLD_MODEL:
            raise
        raise ArtifactError(
            f"{exc}.  {path!r} is the world model plan()'s text defaults load, shipped in "
            f"{trained_dir() / path}: restore it (git checkout -- models/trained/{path}, or "
            "rebuild it with `make models`), or pass world_model_path= another adapter folder, "
            "or another world model (world_model='lm' with lm=, or 'simulator' with simulator=)"
        ) from None
    return _load(os.path.abspath(folder), threads)


def learned_targets(path: str) -> tuple[str, ...]:
    """What the learned world model at ``path`` writes (its folder's ``world_model.json``;
    ``("observation",)`` without one), read without loading the model."""
    from smcplan.llm.artifacts import resolve_artifact
    from smcplan.llm.roles.world_outcome import read_targets

    return read_targets(resolve_artifact(path, "world_model_path"))


def serves_env_twist(path: str | None, observation_model: Any = None) -> bool:
    """Whether the learned world model predicts the score change the ``env`` twist reads: the
    given ``observation_model``'s ``predicts`` (an :class:`OutcomeObservationModel`), else the
    targets recorded in the folder at ``path``."""
    if observation_model is not None:
        return "reward" in getattr(observation_model, "predicts", ())
    return path is not None and "reward" in learned_targets(path)


class OutcomeObservationModel:
    """An :class:`smcplan.llm.ObservationModel` whose replies start with the outcome line:
    each sample's ``value`` is the observation and ``sample.predicted`` the
    :class:`~smcplan.llm.roles.world_outcome.PredictedOutcome` (reward, ending, parse flags)."""

    def __init__(self, model: Any, targets: tuple[str, ...]) -> None:
        self.model, self.targets = model, targets
        self.predicts = tuple(t for t in targets if t != "observation")

    def __getattr__(self, name: str) -> Any:  # lm, temperature, max_new_tokens, ...
        return getattr(self.model, name)

    def __call__(self, contexts: Any, actions: Any, seed: int | None = None) -> list[Any]:
        from smcplan.llm.roles.world_outcome import parse_completion

        samples = self.model(contexts, actions, seed=seed)
        for s in samples:
            s.predicted = parse_completion(s.text, self.targets)
            s.value = s.predicted.observation
        return samples


def predicted_outcome(particle: Any, sample: Any) -> Outcome | None:
    r"""The :class:`Outcome` of one imagined step from a world model's reply that predicted
    it (``sample.predicted``; ``None`` otherwise; the score carried over for a particle that has
    already ended): ``gain`` the predicted score change
    :math:`\hat r`, ``score`` the particle's score plus :math:`\hat r`, ``won`` / ``lost`` /
    ``done`` from the predicted ending (an unread field is 0 / not done)."""
    read = getattr(sample, "predicted", None)
    if read is None:
        return None
    if particle.done:  # the episode ended at an earlier step: nothing more happens
        return Outcome(score=float(particle.score))
    gain = float(read.reward)
    return Outcome(
        score=float(particle.score) + gain,
        gain=gain,
        won=read.won,
        lost=read.lost,
        done=read.done,
    )


def learned_observation_model(
    path: str, max_new_tokens: int, like: Any = None, temperature: float = 1.0
) -> Any:
    """An :class:`smcplan.llm.ObservationModel` on the learned model sampling at
    ``temperature`` (``like``: the agent's model, whose CPU thread setting it copies); wrapped
    in :class:`OutcomeObservationModel` when the model also writes reward or done."""
    from smcplan.llm import ObservationModel

    lm = learned_lm(path, getattr(like, "threads", None))
    model = ObservationModel(lm, temperature=float(temperature), max_new_tokens=max_new_tokens)
    targets = learned_targets(path)
    return OutcomeObservationModel(model, targets) if len(targets) > 1 else model


@functools.lru_cache(maxsize=4)
def _value_head(folder: str) -> Any:
    from smcplan.llm.roles.value_head import load_value_head

    return load_value_head(folder)


def learned_value_model(path: str, lm: Any) -> Any:
    """The :class:`smcplan.llm.roles.value_head.ValueModel` of the value head at ``path`` (a
    folder or a shipped artifact's name; the head is cached) on ``lm``, the model whose hidden
    states it reads; a model without in-process hidden states is refused here."""
    from smcplan.errors import InvalidArgumentError
    from smcplan.llm.artifacts import resolve_artifact
    from smcplan.llm.roles.value_head import ValueModel, check_hidden_states

    if lm is None:
        raise PlanningError(
            "progress 'learned' reads a value head off the model's hidden state; it needs lm= "
            "(the in-process model the head was fitted on)"
        )
    try:
        check_hidden_states(lm, "progress 'learned'")
    except InvalidArgumentError as exc:
        raise PlanningError(str(exc)) from None
    folder = resolve_artifact(path, "value_head")
    return ValueModel(lm, _value_head(os.path.abspath(folder)))
