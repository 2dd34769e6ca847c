r"""Your own proposal, world model and twist in the text planner, checked once and then at
every call.

``plan(task, memory, admissible_actions, proposal=..., world_model=..., twist=...)`` (and
:func:`~smcplan.planning.text_components.build_text_planner`) takes each of the three
components of a planning step either **by name** (the built-ins: ``proposal="lm" | "uniform"``,
``world_model="lm" | "simulator" | "learned"``, the twist by ``progress="lm" | "env" | ...``) or
as **your own**: a plain function or an object with a ``__call__`` method (the Protocols
:class:`~smcplan.planning.components.Proposal`,
:class:`~smcplan.planning.components.WorldModel`, :class:`~smcplan.planning.components.Twist`).
Each is called once per planning step :math:`t = 1..H`, positionally, with the whole batch of
N particles (a ``list`` of :class:`~smcplan.planning.text_particle.TextParticle`; after
resampling several entries may be one object, so never mutate a particle: extend it)::

    proposal(key, particles, t, horizon) -> Proposed(actions, log_q, log_p=None)
    world_model(key, particles, actions, t, horizon)
        -> Transition(particles, observations, log_p=None, log_q=None)
    twist(key, particles, t, horizon) -> Score(delta=None, log_psi=None)

* **proposal**: ``actions``, N strings, :math:`a^i_t \sim q(\cdot \mid x^i_{<t})` (at step 1
  each one of ``admissible_actions``; later from ``particle.admissible`` where the world model
  set it, else the real set; :data:`~smcplan.planning.outcome.DONE_ACTION` for a particle whose
  episode ended, ``particle.done``); ``log_q``, (N,) :math:`\log q(a^i_t \mid x^i_{<t})`, finite;
  ``log_p``, (N,) :math:`\log p_0(a^i_t \mid x^i_{<t})` under the target's prior policy, or
  ``None`` when the proposal *is* the prior.
* **world model**: ``particles``, the N particles one step further, each made by
  ``particle.extend(action, observation, ...)`` (with ``outcome=Outcome(...)`` where you know
  the score, win or loss, which the ``env`` twist reads; ``admissible=`` the particle's next
  actions; ``kg=`` its updated graph); ``observations``, N strings; ``log_p``,
  (N,) :math:`\log p(o^i_t \mid x^i_{<t}, a^i_t)` under the model and ``log_q``, (N,) the
  log-density the observation was actually sampled from (both ``None`` when it samples from
  its own model, :math:`q_W = p`; ``log_q`` without ``log_p`` is an error).  An object may
  declare ``oracle = True`` when it reads the real environment (``result.config["oracle"]``).
* **twist**: ``delta``, (N,) progress :math:`\delta^i_t` (needed by ``weighting="nesyfs"``);
  ``log_psi``, (N,) :math:`\log\psi_t(x^i_{\le t})`, the log-potential of the particle's whole
  path so far, not an increment (needed by ``weighting="twisted"``; at :math:`t = H` it is the
  terminal :math:`\log\phi`).

**How the numbers enter the weights** (:func:`~smcplan.planning.tsmc.tsmc`).  Under
``weighting="twisted"`` the incremental weight of particle :math:`i` at step :math:`t` is

.. math:: w^i_t = \frac{p_0(a^i_t \mid x^i_{<t})\; p(o^i_t \mid x^i_{<t}, a^i_t)\;
   \psi_t(x^i_{\le t})}{q(a^i_t \mid x^i_{<t})\; q_W(o^i_t \mid x^i_{<t}, a^i_t)\;
   \psi_{t-1}(x^i_{<t})},\qquad \psi_0 \equiv 1,

i.e. :math:`\log w = (\texttt{log\_p} - \texttt{log\_q})_{\rm proposal} + (\texttt{log\_p} -
\texttt{log\_q})_{\rm world} + \texttt{log\_psi}_t - \texttt{log\_psi}_{t-1}`, where the
proposal's pair is left out when its ``log_p`` is ``None`` (:math:`q = p_0`) and the world
model's when its ``log_q`` is ``None`` (:math:`q_W = p`).  The weighted particles then target
:math:`\pi(x_{1:H}) \propto p_0(x_{1:H})\,\phi(x_{1:H})`: a heuristic proposal that returns
the prior's ``log_p`` changes which futures are tried, not what they are worth.  Under
``weighting="nesyfs"`` :math:`\log w^i_t = \lambda\delta^i_t`; ``log_q`` is then used only by
the ``"proposal"`` tie-break (the step-1 action with the largest :math:`\log q` decides a
degenerate run).

**Checks.**  :func:`check_component` runs once, when the planner is built: a value that is
neither a built-in name nor a callable, a class instead of an instance, or a callable whose
signature cannot take the planner's positional call raises :class:`ComponentError` (a
``PlanningError`` and a ``TypeError``) naming the argument, the value and the call.  The
wrappers (:class:`CheckedProposal`, :class:`CheckedWorldModel`, :class:`CheckedTwist`) check
what each call returns (the return type, strings for actions and observations, admissible
step-1 actions, particles extended by one step) and pass everything else through; the shapes
and values of ``log_q``, ``log_p``, ``delta`` and ``log_psi`` are checked by
:func:`~smcplan.planning.tsmc.tsmc` itself.

Imports the planner's own modules; never ``smcplan.llm``, agents, eval or cli.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax

from smcplan.planning.checks import check_returned, component_name
from smcplan.planning.components import ComponentError, PlanningError, Proposed, Score, Transition
from smcplan.planning.config import PROGRESS, PROPOSALS, WORLD_MODELS
from smcplan.planning.text_particle import TextParticle

__all__ = [
    "ROLES",
    "SIGNATURES",
    "check_component",
    "wrap_component",
    "own_components",
    "CheckedProposal",
    "CheckedWorldModel",
    "CheckedTwist",
]

#: The planner's three components, by the keyword that passes each one.
ROLES = ("proposal", "world_model", "twist")

#: The call the planner makes of each component and what that call returns.
SIGNATURES = {
    "proposal": "proposal(key, particles, t, horizon) -> Proposed(actions, log_q, log_p=None)",
    "world_model": (
        "world_model(key, particles, actions, t, horizon) "
        "-> Transition(particles, observations, log_p=None, log_q=None)"
    ),
    "twist": "twist(key, particles, t, horizon) -> Score(delta=None, log_psi=None)",
}

_PARAMS = {
    "proposal": "key, particles, t, horizon",
    "world_model": "key, particles, actions, t, horizon",
    "twist": "key, particles, t, horizon",
}
_RETURNS: dict[str, type] = {"proposal": Proposed, "world_model": Transition, "twist": Score}
_GUIDE = "docs/planning.md, 'Your own proposal, world model and twist'"


def _builtins(role: str) -> str:
    names = {"proposal": PROPOSALS, "world_model": WORLD_MODELS, "twist": PROGRESS}[role]
    key = "progress" if role == "twist" else role
    return f"{key}=" + " | ".join(repr(str(n)) for n in names)


def _show(value: Any) -> str:
    if callable(value) and not isinstance(value, type):
        return component_name(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_component(role: str, value: Any) -> Callable[..., Any]:
    """``value`` if it can be the planner's ``role`` (``"proposal"``, ``"world_model"`` or
    ``"twist"``): a callable (a function, or an object with ``__call__``) whose signature
    takes the planner's positional call (:data:`SIGNATURES`).  Otherwise a
    :class:`ComponentError` naming ``role``, the value and the fix.  A callable without an
    inspectable signature (some builtins) is accepted here and checked by what it returns."""
    if role not in ROLES:
        raise PlanningError(f"unknown component role {role!r}; known: {', '.join(ROLES)}")
    call = SIGNATURES[role]
    if isinstance(value, str):
        # the built-in proposals and world models are named in PlannerConfig (plan() puts a
        # name there); the built-in twists by progress=, so a string twist= is refused here
        if role == "twist":
            raise ComponentError(
                f"twist={value!r} is a string, and twist= takes your own callable {call}; the "
                f"built-in twists are chosen by name with {_builtins(role)} or a '+'-sum "
                f"(e.g. progress={value!r} if it is one of them; {_GUIDE})"
            )
        raise ComponentError(
            f"{role}={value!r} is a name, not a component; plan() and build_text_planner take "
            f"the built-ins by name ({_builtins(role)}) and your own as a callable {call}"
        )
    if isinstance(value, type):
        raise ComponentError(
            f"{role}={value.__name__} is a class; pass an instance, {role}={value.__name__}(...), "
            f"whose __call__ is {call}"
        )
    if not callable(value):
        raise ComponentError(
            f"{role}={_show(value)} ({type(value).__name__}) is neither the name of a built-in "
            f"({_builtins(role)}) nor a callable; pass a name or your own callable {call} "
            f"({_GUIDE})"
        )
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return value
    try:
        signature.bind(*range(len(_PARAMS[role].split(", "))))
    except TypeError:
        name = _show(value)
        if inspect.isfunction(value) or inspect.ismethod(value):
            define = name if name.isidentifier() else f"my_{role}"
            fix = f"define it as def {define}({_PARAMS[role]}): ..."
        else:
            fix = f"give {name} a method def __call__(self, {_PARAMS[role]}): ..."
        raise ComponentError(
            f"{role}={name} takes {signature}, but the planner calls {call} (positionally, once "
            f"per step with the whole batch); {fix}"
        ) from None
    return value


class _Checked:
    """A user's component with what it returns checked at every call; other attributes (e.g.
    a twist's ``informative()``, a world model's ``oracle``) are the component's own."""

    role = ""

    def __init__(self, component: Any, admissible: Iterable[str] = ()) -> None:
        self.component = check_component(self.role, component)
        self.admissible = frozenset(admissible)
        self.__name__ = component_name(component)

    def __getattr__(self, name: str) -> Any:
        component = self.__dict__.get("component")
        if component is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(component, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.component!r})"

    def _returned(self, out: Any, t: int) -> Any:
        return check_returned(out, _RETURNS[self.role], f"{self.role}={self.__name__}", t)

    def _strings(self, items: Any, field: str, t: int) -> list[Any]:
        if not isinstance(items, list | tuple):
            raise ComponentError(
                f"step {t}: {self.role}={self.__name__} returned {field} as "
                f"{type(items).__name__}; it must be a list of N strings, one per particle"
            )
        bad = [(i, x) for i, x in enumerate(items) if not isinstance(x, str)]
        if bad:
            i, x = bad[0]
            raise ComponentError(
                f"step {t}: {self.role}={self.__name__} returned {field}[{i}] = {x!r} "
                f"({type(x).__name__}); text {field} are strings"
            )
        return list(items)


class CheckedProposal(_Checked):
    """The user's proposal: returns a :class:`Proposed` whose ``actions`` are N strings, at
    step 1 each one of the admissible actions (the planner's result is one of them)."""

    role = "proposal"

    def __call__(
        self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int
    ) -> Proposed:
        out = self._returned(self.component(key, particles, t, horizon), t)
        actions = self._strings(out.actions, "actions", t)
        if t == 1 and self.admissible:
            bad = [(i, a) for i, a in enumerate(actions) if a not in self.admissible]
            if bad:
                i, a = bad[0]
                raise PlanningError(
                    f"step 1: proposal={self.__name__} proposed {a!r} for particle {i}, which is "
                    f"not an admissible action ({', '.join(sorted(self.admissible))}); the "
                    "first action must be one of admissible_actions (the plan's result)"
                )
        return Proposed(actions, out.log_q, out.log_p)


class CheckedWorldModel(_Checked):
    """The user's world model: returns a :class:`Transition` with N particles, each a
    :class:`TextParticle` one step longer than its parent, and N string observations."""

    role = "world_model"

    def __call__(
        self,
        key: jax.Array,
        particles: list[TextParticle],
        actions: list[str],
        t: int,
        horizon: int,
    ) -> Transition:
        out = self._returned(self.component(key, particles, actions, t, horizon), t)
        observations = self._strings(out.observations, "observations", t)
        new = out.particles
        if not isinstance(new, list | tuple):
            raise ComponentError(
                f"step {t}: world_model={self.__name__} returned particles as "
                f"{type(new).__name__}; it must be a list of N TextParticle"
            )
        for i, (old, p) in enumerate(zip(particles, new, strict=False)):
            if not isinstance(p, TextParticle):
                raise ComponentError(
                    f"step {t}: world_model={self.__name__} returned particles[{i}] of type "
                    f"{type(p).__name__}; return particle.extend(action, observation, ...) "
                    "(a smcplan.planning.TextParticle)"
                )
            if len(p.steps) != len(old.steps) + 1:
                raise PlanningError(
                    f"step {t}: world_model={self.__name__} returned particles[{i}] with "
                    f"{len(p.steps)} steps after its parent's {len(old.steps)}; extend each "
                    "particle by exactly one step: particle.extend(action, observation, ...)"
                )
        return Transition(list(new), observations, out.log_p, out.log_q)


class CheckedTwist(_Checked):
    """The user's twist: returns a :class:`Score` (``delta`` and ``log_psi`` are checked by
    :func:`~smcplan.planning.tsmc.tsmc`: one finite value per particle, the one the weighting
    needs present)."""

    role = "twist"

    def __call__(
        self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int
    ) -> Score:
        return self._returned(self.component(key, particles, t, horizon), t)


_WRAPPERS: dict[str, type[_Checked]] = {
    "proposal": CheckedProposal,
    "world_model": CheckedWorldModel,
    "twist": CheckedTwist,
}


def wrap_component(role: str, component: Any, admissible: Sequence[str] = ()) -> _Checked:
    """``component`` checked once (:func:`check_component`) and wrapped so that what each call
    returns is checked too; ``admissible``: the real admissible actions (the proposal's step-1
    actions must be among them)."""
    if isinstance(component, _Checked):
        return component
    return _WRAPPERS[role](component, admissible)


def own_components(
    given: dict[str, Any],
    options: dict[str, Any],
    config: Any,
    *,
    proposer: Any = None,
    observation_model: Any = None,
    simulator: Any = None,
) -> dict[str, Callable[..., Any]]:
    """Sort ``given`` (``{"proposal": ..., "world_model": ..., "twist": ...}`` as passed to
    :func:`~smcplan.planning.text_components.build_text_planner`): ``None`` is the built-in of
    the settings, a name of a built-in proposal or world model goes into ``options`` (and so to
    :class:`~smcplan.planning.config.PlannerConfig`, which checks it), anything else must be the
    user's own component (:func:`check_component`).  Returns the user's components by role.
    ``config`` (the :class:`~smcplan.planning.config.PlannerConfig` before ``options``) and the
    built-in roles given (``proposer``, ``observation_model``, ``simulator``) are checked
    against them: a built-in's role next to the user's own component is an error, not silently
    unused."""
    custom: dict[str, Callable[..., Any]] = {}
    for role in ROLES:
        value = given.get(role)
        if value is None:
            continue
        if isinstance(value, str) and role != "twist":
            options[role] = value
        else:
            custom[role] = check_component(role, value)
    unused = [
        (role, name)
        for role, name, value in (
            ("proposal", "proposer", proposer),
            ("world_model", "observation_model", observation_model),
            ("world_model", "simulator", simulator),
        )
        if role in custom and value is not None
    ]
    if unused:
        role, name = unused[0]
        raise PlanningError(
            f"{name}= is a role of the built-in {role}, unused with your own "
            f"{role}={component_name(custom[role])}; drop {name}= (your {role} can hold what "
            "it needs itself)"
        )
    k = options.get("particles_per_action", getattr(config, "particles_per_action", 0))
    if "proposal" in custom and k:
        raise PlanningError(
            f"particles_per_action={k} allocates the root's particles to the admissible actions "
            "through the built-in uniform proposal; with your own "
            f"proposal={component_name(custom['proposal'])} set particles_per_action=0 (and "
            "num_particles=N)"
        )
    return custom
