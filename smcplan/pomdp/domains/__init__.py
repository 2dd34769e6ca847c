"""Toy POMDP domains, each a NumPyro program (``*_program``) and its compiled arrays.

* :func:`tiger` — Kaelbling, Littman & Cassandra (1998).
* :func:`rocksample` — Smith & Simmons (2004), RockSample(n, k).
* :func:`household` — an ALFWorld-like search for a hidden object; :func:`household_check_first`
  is the scenario where one-step greedy is wrong.

Imports only :mod:`smcplan.pomdp`; nothing from ``smcplan.smc`` or above.
"""

from smcplan.pomdp.domains.household import (
    CHECK_FIRST,
    household,
    household_check_first,
    household_program,
)
from smcplan.pomdp.domains.rocksample import rocksample, rocksample_program
from smcplan.pomdp.domains.tiger import tiger, tiger_program

__all__ = [
    "tiger",
    "tiger_program",
    "rocksample",
    "rocksample_program",
    "household",
    "household_program",
    "household_check_first",
    "CHECK_FIRST",
]
