"""A domain's array form from its NumPyro program: one function, the program's parameters.

Each domain defines ``<name>_program(...) -> POMDPProgram``; :func:`compiled` makes
``<name>(...) -> DiscretePOMDP`` from it without repeating its signature.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec

from smcplan.pomdp.model import DiscretePOMDP
from smcplan.pomdp.program import POMDPProgram, compile_program

__all__ = ["compiled"]

P = ParamSpec("P")


def compiled(program_fn: Callable[P, POMDPProgram], doc: str) -> Callable[P, DiscretePOMDP]:
    """``f(*args, **kwargs) = compile_program(program_fn(*args, **kwargs))``: a domain's array
    form, with the program function's parameters (shown by ``help``) and the docstring ``doc``."""

    @functools.wraps(program_fn)
    def make(*args: P.args, **kwargs: P.kwargs) -> DiscretePOMDP:
        return compile_program(program_fn(*args, **kwargs))

    name = program_fn.__name__.removesuffix("_program")
    make.__name__, make.__qualname__, make.__doc__ = name, name, doc
    make.__signature__ = inspect.signature(program_fn).replace(  # type: ignore[attr-defined]
        return_annotation="DiscretePOMDP"
    )
    return make
