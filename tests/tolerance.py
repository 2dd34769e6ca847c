"""Tolerances of floating-point comparisons, derived from the arithmetic (never a round number).

Convention: every helper returns a bound on the difference between *two* floating-point
computations of the same quantity (each with its own rounding, e.g. two summation orders, two
batch shapes).  A comparison against an exact or float64 reference needs only half of it; the
helpers are then conservative by a factor 2, still far below the size of the bugs the tests
guard against (a wrong prompt, a dropped token or a swapped particle moves a log-prob by
>= 0.01 and a belief by >= 1e-3).

Notation (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002):
u = eps/2 is the unit roundoff, gamma(n) = n*u / (1 - n*u) (Lemma 3.1: a product of n factors
(1 + delta_i)^(+-1), |delta_i| <= u, is 1 + theta with |theta| <= gamma(n)).
"""

from __future__ import annotations

import math

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23
EPS64 = float(np.finfo(np.float64).eps)  # 2**-52

__all__ = [
    "EPS32",
    "EPS64",
    "gamma",
    "gamma_prob",
    "sum_tol",
    "chain_tol",
    "normalized_tol",
    "logsumexp_tol",
    "log_softmax_tol",
    "network_logprob_tol",
    "llama_logit_l1",
    "llama_logprob_tol",
    "literal_tol",
    "decimal_tol",
    "same_logits_tol",
    "bayes_filter_tol",
    "bayes_loglik_tol",
    "expectimax_tol",
    "smc_logweight_tol",
    "smc_logz_tol",
]


def gamma(n: int, eps: float = EPS32) -> float:
    """gamma_n = n*u / (1 - n*u), u = eps/2: the worst-case relative error of n roundings
    (Higham Lemma 3.1).  Requires n*u < 1."""
    u = eps / 2
    if n * u >= 1:
        raise ValueError(f"gamma({n}) undefined for eps={eps}")
    return n * u / (1 - n * u)


def gamma_prob(n: int, eps: float = EPS32, lam: float = 6.0) -> float:
    """Probabilistic gamma~_n = lam*sqrt(n)*u (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019,
    Thm 2.4 / 3.1): if the rounding errors are independent and mean-zero, an inner product of
    length n errs by at most gamma~_n * sum|x_i y_i| with probability >= 1 - 2n*exp(-lam**2/2)
    (lam = 6: 1 - 3e-8 * n).  A *model* of the rounding, not a worst-case bound."""
    return lam * math.sqrt(n) * eps / 2


def sum_tol(n_terms: int, magnitude: float, eps: float = EPS32) -> float:
    """Two computations of a sum of n terms, each |x_i| <= magnitude, in different orders:
    each errs by <= gamma(n-1) * sum|x_i| (Higham §4.2, eq. 4.4), so they differ by at most
    2 * gamma(n) * n * magnitude."""
    n = max(int(n_terms), 1)
    return 2 * gamma(n, eps) * n * magnitude


def chain_tol(k: int, eps: float = EPS32) -> float:
    """Relative difference of two results of a product/quotient chain of k roundings:
    each is x * (1 + theta_k), |theta_k| <= gamma(k) (Higham Lemma 3.1), so 2 * gamma(k)."""
    return 2 * gamma(k, eps)


def normalized_tol(n: int, eps: float = EPS32) -> float:
    """Absolute tolerance of a normalised vector p = w / sum(w) of n non-negative entries:
    each p_i = w_i / s carries the sum's gamma(n-1) and the division's u, so
    |p^_i - p_i| <= gamma(n) * p_i <= gamma(n); the computed sum of the p^_i differs from 1 by
    <= gamma(n) + gamma(n-1).  Two computations (or sum vs 1): 2 * gamma(n + 1)."""
    return 2 * gamma(n + 1, eps)


def logsumexp_tol(n: int, magnitude: float, eps: float = EPS32) -> float:
    """Two computations of log sum_i exp(x_i) for n entries with |x_i| <= magnitude, as
    m + log sum exp(x_i - m), m = max x (first order in u): x_i - m rounds by u*2*magnitude,
    which exp turns into that relative error plus its own u; the sum adds gamma(n-1); log turns
    the relative error into an absolute one and rounds by u*log(n); adding m rounds by
    u*(magnitude + log n).  One computation: gamma(n) + 3u*(magnitude + log n + 1); two: 2x."""
    u = eps / 2
    return 2 * (gamma(n, eps) + 3 * u * (magnitude + math.log(max(n, 1)) + 1))


def log_softmax_tol(n: int, magnitude: float, eps: float = EPS32) -> float:
    """Two computations of one log-softmax entry x_k - logsumexp(x) (n entries, |x_i| <=
    magnitude): logsumexp_tol plus the subtraction's rounding u*(2*magnitude + log n) each."""
    u = eps / 2
    return logsumexp_tol(n, magnitude, eps) + 2 * u * (2 * magnitude + math.log(max(n, 1)))


def bayes_filter_tol(steps: int, n_states: int, eps: float = EPS32) -> float:
    """Relative (hence, as beliefs are <= 1, also absolute) per-entry tolerance of beliefs after
    ``steps`` exact Bayes steps b' = O[a,:,o] * (b @ T[a]) / eta over n_states states.

    One step rounds each entry by <= gamma(n_states + 3) relative (the length-S dot product
    with non-negative terms, the product with O, the division, and the inputs' rounding to the
    working precision), i.e. by <= 2 * gamma(n_states + 3) in Hilbert's projective metric
    d(x, y) = log max(x/y) - log min(x/y).  Non-negative linear maps do not expand that metric
    and normalisation does not change it (Birkhoff), so after k steps d <= 2k * gamma(S + 3);
    two normalised vectors at distance d differ entrywise by <= (e^d - 1) relative.  Two
    computations: 2x.  Float32, S = 64, 25 steps: ~4e-4 relative, below the >= 1e-3 a wrong
    transition or observation row moves a belief.
    """
    d = 2 * steps * gamma(n_states + 3, eps)
    return 2 * math.expm1(d)


def bayes_loglik_tol(steps: int, n_states: int, loglik: float, eps: float = EPS32) -> float:
    """Absolute tolerance of the log-likelihood sum_t log eta_t of ``steps`` Bayes steps:
    eta_t = sum O * (b_t @ T) errs by the entering belief's relative error
    (bayes_filter_tol(t-1)/2) plus gamma(2S + 3) of its own two length-S sums, log turns that
    into an absolute error, and each log and the running sum round by <= (gamma(steps) + u) *
    |log eta_t| (sum_t |log eta_t| = |loglik| as every eta_t <= 1).  Two computations: 2x."""
    u = eps / 2
    per_step = sum(bayes_filter_tol(t, n_states, eps) / 2 for t in range(steps))
    one = per_step + steps * gamma(2 * n_states + 3, eps) + (gamma(steps, eps) + u) * abs(loglik)
    return 2 * one


def expectimax_tol(
    horizon: int, n_states: int, n_obs: int, r_max: float, eps: float = EPS64
) -> float:
    """Absolute tolerance of a horizon-H expectimax value Q_H(b, a) of a discrete POMDP.

    Q_H = b.R + gamma * sum_o P(o) max_a' Q_{H-1}(b_o, a'): every reward reaches the value
    through a chain of non-negative weights (b, T, O, the normalisation, P(o), the discount),
    each level adding <= S*S*O + S + 3 roundings (b @ T, the products with O and their sums,
    the division, the discount); max is exact.  So each of the (weighted) terms, whose absolute
    sum is <= H * r_max, carries a relative error <= gamma(H * (S*S*O + S + 3)).  Two
    computations: 2x.
    """
    k = horizon * (n_states * n_states * n_obs + n_states + 3)
    return 2 * gamma(k, eps) * horizon * r_max


def smc_logweight_tol(steps: int, n: int, magnitude: float, eps: float = EPS32) -> float:
    """Absolute tolerance of normalised log-weights lw_i - logsumexp(lw) of n particles after
    ``steps`` reweightings, every log-weight and increment of size <= magnitude.

    The subtracted logsumexp is a shift common to all particles, so the differences
    lw_i - lw_j carry only the per-step roundings of the increment's addition and of the
    subtraction (<= 2u * magnitude each, plus the increment's own rounding u * magnitude);
    the last normalisation adds one log-softmax's rounding.  Two computations: 2x (per step),
    i.e. steps * 6u * magnitude + log_softmax_tol(n, magnitude).
    """
    u = eps / 2
    return 2 * steps * 3 * u * magnitude + log_softmax_tol(n, magnitude, eps)


def smc_logz_tol(steps: int, n: int, magnitude: float, eps: float = EPS32) -> float:
    """Absolute tolerance of log Z = sum_t logsumexp(lw_{t-1} + increment_t) (normalised
    lw_{t-1}): each term carries the entering weights' smc_logweight_tol and its own
    logsumexp_tol; the running sum adds sum_tol(steps, magnitude)."""
    per_step = smc_logweight_tol(steps, n, magnitude, eps) + logsumexp_tol(n, magnitude, eps)
    return steps * per_step + sum_tol(steps, magnitude, eps)


def network_logprob_tol(
    n_tokens: int,
    *,
    hidden: int,
    inner: int,
    layers: int,
    vocab: int,
    context: int,
    logit_l1: float,
    eps: float = EPS32,
    lam: float = 6.0,
) -> float:
    """Sums of n_tokens per-token log-probs from two forward passes of one network that differ
    only in the order of their float reductions (other batch width, padding, KV-cache reuse).

    A *model* of the rounding (not a proven bound for the whole network): every activation is an
    inner product of length <= k = max(hidden, inner, context) (projections, MLP, attention over
    the context), erring by gamma~_k relative to its absolute terms (gamma_prob: independent
    roundings, Higham & Mary 2019); first order, the `layers` blocks add their relative errors,
    and the logit z_j = w_j . h adds gamma~_hidden, all relative to sum_i |w_ji h_i| <= logit_l1.
    So per pass |dz| <= (layers * gamma~_k + gamma~_hidden) * logit_l1; the log-prob
    z_k - logsumexp(z) moves by <= 2|dz| plus the log-softmax's own rounding (log_softmax_tol/2
    with gamma~_vocab for gamma(vocab), |z| <= logit_l1).  Two passes: 2x per token, n_tokens of
    them, plus the two sums' own sum_tol with |log p| <= log(vocab) + 2*logit_l1.  For the tiny
    test model (d=64, 128 inner, 2 layers, V=512, logit_l1 <= 1.6) this is ~1e-4 per token:
    ~1e-3 for 10 tokens, ~6e-3 for 40, below the >= 0.01 nats a wrong token or prompt moves a
    score.  For SmolLM2 (d=576, 30 layers) the model is far too pessimistic to be useful.
    """
    u = eps / 2
    k = max(hidden, inner, context)
    dz = (layers * gamma_prob(k, eps, lam) + gamma_prob(hidden, eps, lam)) * logit_l1
    softmax = gamma_prob(vocab, eps, lam) + 3 * u * (logit_l1 + math.log(vocab) + 1)
    softmax += u * (2 * logit_l1 + math.log(vocab))
    per_token = 2 * dz + softmax
    max_neglogp = math.log(vocab) + 2 * logit_l1
    return n_tokens * 2 * per_token + sum_tol(n_tokens, max_neglogp, eps)


def same_logits_tol(
    n_tokens: int, vocab: int, logit_max: float, eps: float = EPS32, lam: float = 6.0
) -> float:
    """Sums of n_tokens log-probs that two code paths compute from the *same* float32 logits
    rows (e.g. llama-server's forced completion and its echo of the same KV states): each path's
    log-softmax over ``vocab`` entries of size <= logit_max rounds by gamma~_vocab (gamma_prob:
    a long sum, model of independent roundings) plus log_softmax_tol's u-terms, per token, and
    the two sums of n terms of size <= logit_max + log(vocab) add sum_tol.  It does not cover
    logits from another batch (llama.cpp: up to ~0.24 nats, docs/scale.md), which is what such
    tests guard against."""
    u = eps / 2
    per_token = 2 * (gamma_prob(vocab, eps, lam) + u * (5 * logit_max + 2 * math.log(vocab) + 3))
    return n_tokens * per_token + sum_tol(n_tokens, logit_max + math.log(vocab), eps)


def llama_logit_l1(model) -> float:
    """An upper bound on max_j sum_i |w_ji h_i| of a (transformers) Llama's logits: h is the
    final RMSNorm's output g * x / rms(x), so ||h||_2 <= sqrt(d) * max|g|, and by Cauchy-Schwarz
    sum_i |w_ji h_i| <= ||w_j||_2 * ||h||_2."""
    import torch

    with torch.no_grad():
        g = model.model.norm.weight.float()
        w = model.lm_head.weight.float()
        d = g.numel()
        return float(math.sqrt(d) * g.abs().max() * w.norm(dim=1).max())


def llama_logprob_tol(model, n_tokens: int, context: int, eps: float = EPS32) -> float:
    """network_logprob_tol with the sizes of a transformers Llama ``model`` (its config) and
    logit_l1 = llama_logit_l1(model); ``context`` bounds the prompt + continuation length."""
    c = model.config
    return network_logprob_tol(
        n_tokens,
        hidden=c.hidden_size,
        inner=c.intermediate_size,
        layers=c.num_hidden_layers,
        vocab=c.vocab_size,
        context=context,
        logit_l1=llama_logit_l1(model),
        eps=eps,
    )


def decimal_tol(digits: int) -> float:
    """Half a unit in the last kept decimal: the error of round(x, digits)."""
    return 0.5 * 10.0**-digits


def literal_tol(literal: str) -> float:
    """Half a unit in the last written digit of a decimal literal (its rounding), e.g.
    "0.716740" -> 5e-7.  Pass the literal as written in the test."""
    s = literal.strip().lstrip("+-").lower()
    mantissa, _, exp = s.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))
