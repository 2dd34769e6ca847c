"""smcplan: probabilistic-programming planning for language agents under partial observability.

Layers (imports point down only; see docs/architecture.md):

    cli / eval  ->  agents  ->  planning  ->  memory | llm | envs  ->  pomdp  ->  smc

``import smcplan`` is cheap: it imports no JAX, torch or transformers.  Public entry
points are resolved lazily on first use (``smcplan.plan``).
"""

from __future__ import annotations

from typing import Any

#: The package version (PEP 440), the same as ``pyproject.toml``'s.
__version__ = "0.1.0"
__all__ = ["__version__", "plan"]


def __getattr__(name: str) -> Any:
    if name == "plan":
        from smcplan.planning import plan

        return plan
    raise AttributeError(f"module 'smcplan' has no attribute {name!r}")
