"""The records a :class:`~smcplan.llm.LanguageModel` returns and keeps: samples and usage.

Imports only the standard library.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Sample", "Usage"]


@dataclass
class Sample:
    """One generated output: parsed ``value``, raw ``text``, ``logq``/``logp`` (see
    :meth:`smcplan.llm.protocol.LanguageModel.sample`), ``token_ids`` the generated tokens
    (end-of-sequence included when ``finished``).

    ``finished`` is False when generation stopped at ``max_new_tokens`` before end-of-sequence
    (only possible for unbounded output types; ``value`` is then the parse of the partial text,
    or ``None`` if it does not parse).
    """

    value: Any
    text: str
    logq: float
    logp: float
    num_tokens: int
    finished: bool
    token_ids: list[int] = field(default_factory=list)


@dataclass
class Usage:
    """Counters of what the model did (the evaluation records them per step).

    ``prompt_tokens`` counts the tokens of each distinct prompt of a call once;
    ``cached_tokens`` is the part of them whose key/value states came from the prefix cache, so
    ``prompt_tokens - cached_tokens`` tokens were actually run (prefilled).
    """

    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    scored_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the prefix cache (not run again)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: How many compiled token-mask processors (one per output type: each admissible-action set is
#: one) a model keeps, least recently used evicted first: an agent sees a new admissible set
#: at most steps, so an unbounded table grows for the whole sweep.
MAX_PROCESSORS = 256


@dataclass
class _Runtime:
    processors: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    vocabulary: Any = None

    def processor(self, key: str, build: Callable[[], Any]) -> Any:
        """The processor for ``key``; ``build()`` makes it on a miss (LRU, at most
        :data:`MAX_PROCESSORS` kept)."""
        if key in self.processors:
            self.processors.move_to_end(key)
            return self.processors[key]
        proc = self.processors[key] = build()
        while len(self.processors) > MAX_PROCESSORS:
            self.processors.popitem(last=False)
        return proc
