"""``inspect.signature(smcplan.plan)`` is a real signature, and each overload is its entry's."""

from __future__ import annotations

import inspect
from typing import get_overloads

import pytest

import smcplan
from smcplan.planning.plan import plan_pomdp
from smcplan.planning.result import PlanResult
from smcplan.planning.text_components import plan_text
from smcplan.pomdp import DiscretePOMDP, domains


def test_plan_has_a_real_signature():
    sig = inspect.signature(smcplan.plan, eval_str=True)
    first, *rest = sig.parameters.values()
    assert str(sig) != "(*args, **kwargs)"
    assert first.name == "pomdp_or_task" and first.kind is first.POSITIONAL_ONLY
    assert first.annotation == DiscretePOMDP | str | None
    assert [p.kind for p in rest] == [first.VAR_POSITIONAL, first.VAR_KEYWORD]
    assert sig.return_annotation is PlanResult


def test_each_entry_binds_the_calls_its_overload_accepts():
    sig = inspect.signature(smcplan.plan)
    tiger = domains.tiger()
    for args, kwargs in [
        ((tiger, tiger.b0, 0, 8, 2), {"twist": "none"}),
        ((), {"pomdp": tiger, "num_particles": 8}),
        (("find the coin", None, ["look", "go east"]), {"lm": None, "num_particles": 2}),
        ((), {"task": "find the coin", "memory": None, "admissible_actions": ["look"]}),
    ]:
        sig.bind(*args, **kwargs)
    overloads = get_overloads(smcplan.plan)
    assert len(overloads) == 2
    for entry, impl in zip(overloads, (plan_pomdp, plan_text), strict=True):
        *head, _options = inspect.signature(entry).parameters
        assert head == list(inspect.signature(impl).parameters)[: len(head)]


def test_the_keyword_form_dispatches_like_the_positional_one():
    tiger = domains.tiger()
    by_position = smcplan.plan(tiger, tiger.b0, 0, num_particles=8, horizon=2, jit=False)
    by_name = smcplan.plan(
        pomdp=tiger, belief=tiger.b0, key=0, num_particles=8, horizon=2, jit=False
    )
    assert by_position.action == by_name.action
    assert float(by_position.log_Z) == pytest.approx(float(by_name.log_Z))


def test_public_entry_points_show_their_parameters():
    """No public function or class of an ``__all__`` hides its parameters behind ``(*args, **kw)``.

    ``smcplan.llm`` is left out: its names resolve lazily and import torch (its signatures are
    in the API reference, read statically).  Protocols (``typing.Protocol``) and exceptions have
    no constructor of their own and are skipped.
    """
    import importlib

    names = ["smc", "pomdp", "planning", "memory", "envs", "agents", "eval", "errors"]
    hidden = []
    for module in [smcplan, *(importlib.import_module(f"smcplan.{n}") for n in names)]:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and (
                issubclass(obj, BaseException) or getattr(obj, "_is_protocol", False)
            ):
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            try:
                params = inspect.signature(obj).parameters.values()
            except ValueError:
                continue
            kinds = {p.kind for p in params}
            if kinds and kinds <= {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
                hidden.append(f"{module.__name__}.{name}")
    assert not hidden, hidden
