"""Pure JAX SMC kernels: resampling schemes, log-weight arithmetic, the generic SMC step.

Imports no torch, transformers or outlines (layer ``smc`` in docs/architecture.md).
"""

from smcplan.smc import resampling, weights
from smcplan.smc.errors import InvalidWeightsError
from smcplan.smc.resampling import multinomial, residual, stratified, systematic
from smcplan.smc.step import SMCInfo, SMCState, init, resample_state, step
from smcplan.smc.validation import checked
from smcplan.smc.weights import ess, log_mean_exp, normalize

__all__ = [
    "resampling",
    "weights",
    "InvalidWeightsError",
    "multinomial",
    "residual",
    "stratified",
    "systematic",
    "SMCInfo",
    "SMCState",
    "init",
    "step",
    "resample_state",
    "checked",
    "ess",
    "log_mean_exp",
    "normalize",
]
