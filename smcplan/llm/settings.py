"""Settings of the language-model roles that agents configure, checked once at construction.

:class:`ReflectionConfig`: NeSyFS reflection, n sampled verdicts on a proposed action, accepted
iff the fraction of "Yes" is at least the threshold (:class:`smcplan.llm.Reflection`).

Imports only the standard library and :mod:`smcplan.errors` (no torch), so an agent or the CLI
can check these settings before a model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from smcplan.errors import InvalidArgumentError, Settings, UnknownNameError

__all__ = ["ReflectionConfig", "ReflectionSettingsError"]


class ReflectionSettingsError(InvalidArgumentError, UnknownNameError):
    """A bad or unknown reflection setting (a ``ValueError``; the message names the field)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class ReflectionConfig(Settings):
    r"""NeSyFS reflection: ``samples`` verdicts :math:`v_1..v_n` (n = 5) are drawn at
    ``temperature`` (1.0), each answer at most ``tokens`` new tokens (32; ``None``: the role's
    own budget, 80), and the action is accepted iff
    :math:`\frac{1}{n}\sum_j [v_j = \text{Yes}] \ge` ``threshold`` (0.8: at least 4 of 5).
    ``enabled=False`` is the "no reflection" ablation (the fast action is executed)."""

    owner: ClassVar[str] = "reflection option"
    error: ClassVar[type[Exception]] = ReflectionSettingsError

    samples: int = 5
    threshold: float = 0.8
    temperature: float = 1.0
    tokens: int | None = 32
    enabled: bool = True

    def __post_init__(self) -> None:
        n = self.samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ReflectionSettingsError(
                f"reflection samples (n) must be an integer >= 1; got {n!r}"
            )
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 <= float(t) <= 1.0:
            raise ReflectionSettingsError(
                f"reflection threshold must be a number in [0, 1] (the fraction of Yes votes "
                f"that accepts); got {t!r}"
            )
        temp = self.temperature
        if isinstance(temp, bool) or not isinstance(temp, int | float) or not float(temp) >= 0.0:
            raise ReflectionSettingsError(
                f"reflection temperature must be a number >= 0; got {temp!r}"
            )
        k = self.tokens
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ReflectionSettingsError(
                f"reflection tokens must be an integer >= 1 or None (the role's own budget); "
                f"got {k!r}"
            )
        if not isinstance(self.enabled, bool):
            raise ReflectionSettingsError(
                f"reflection enabled must be true or false; got {self.enabled!r}"
            )
