r"""Your own proposal and twist in ``smcplan.plan``, on a real TextWorldExpress game.

    .venv/bin/python examples/custom_components.py                 # twx:coin, dev seed 10000
    .venv/bin/python examples/custom_components.py --seed 10001 --particles 32 --horizon 4

An agent plays ``twx:coin`` ("find the coin and take it") by planning every step with the text
``plan()``, given two components written here as plain Python:

* the **proposal** ``explore_first`` (a function): each particle draws its next action with
  probability :math:`q(a) \propto` 4 for a ``take``, 2 for an ``open`` or a ``move``, 1/4 for
  anything else (close, look, inventory), and returns :math:`\log q(a)` and the log-probability
  :math:`\log p_0(a) = -\log|\mathcal A|` of the uniform prior policy.  Under
  ``weighting="twisted"`` the planner multiplies each weight by :math:`p_0/q`, so the heuristic
  only decides which futures are tried, not what they are worth;
* the **twist** ``CoinTwist`` (an object with ``__call__``): :math:`\log\psi_t(x_{\le t}) =
  \sum_{s\le t}\delta_s`, :math:`\delta_s = 5\,\Delta\mathrm{score}_s + [\text{the step entered
  a room neither the episode nor this path has been in}]`; the weight of step t is
  :math:`\psi_t/\psi_{t-1} = e^{\delta_t}`.  It keeps the rooms the episode has visited.

The world model is the built-in simulator (``world_model="simulator"``): each particle steps its
own ``clone()`` of the game, an **oracle** (``result.config["oracle"]`` says so).  No language
model is loaded; the whole episode runs in a few seconds on CPU (tests/test_examples.py runs
it).  ``result.config`` names what ran: ``proposal_kind`` ``explore_first``, ``progress``
``CoinTwist``.
"""

from __future__ import annotations

import argparse
import math
import re

import jax
import jax.numpy as jnp
import numpy as np

import smcplan
from smcplan.envs import make
from smcplan.planning import Proposed, Score, TextParticle
from smcplan.planning.outcome import DONE_ACTION

ROOM = re.compile(r"You are in the ([a-z ]+?)\.")


def preference(action: str) -> float:
    """The proposal's unnormalised weight of an action."""
    if action.startswith("take"):
        return 4.0
    if action.startswith(("open", "move")):
        return 2.0
    return 0.25


def explore_first(key: jax.Array, particles: list[TextParticle], t: int, horizon: int) -> Proposed:
    """proposal(key, particles, t, horizon) -> Proposed(actions, log_q, log_p): one action per
    particle from its own admissible actions (``particle.admissible``)."""
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    actions, log_q, log_p = [], [], []
    for p in particles:
        if p.done:  # the episode ended on this path: the particle stays as it is
            actions.append(DONE_ACTION)
            log_q.append(0.0)
            log_p.append(0.0)
            continue
        options = list(p.admissible)
        w = np.array([preference(a) for a in options])
        q = w / w.sum()
        i = int(rng.choice(len(options), p=q))
        actions.append(options[i])
        log_q.append(math.log(q[i]))
        log_p.append(-math.log(len(options)))  # the uniform prior p0
    return Proposed(actions, jnp.asarray(log_q), jnp.asarray(log_p))


def room(observation: str) -> str | None:
    match = ROOM.search(observation)
    return match.group(1) if match else None


class CoinTwist:
    """twist(key, particles, t, horizon) -> Score(delta, log_psi): score gains and new rooms."""

    def __init__(self, visited: set[str]) -> None:
        self.visited = visited  # rooms the real episode has been in

    def delta(self, p: TextParticle, s: int) -> float:
        """delta of step s (1-based) of particle p."""
        action, observation = p.steps[s - 1]
        before = {room(o) for _, o in p.steps[: s - 1]} | {room(p.root_observation)}
        here = room(observation)
        new_room = here is not None and here not in self.visited and here not in before
        return 5.0 * p.outcomes[s - 1].gain + float(new_room)

    def __call__(
        self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int
    ) -> Score:
        delta = [self.delta(p, t) for p in particles]
        log_psi = [sum(self.delta(p, s) for s in range(1, t + 1)) for p in particles]
        return Score(delta=jnp.asarray(delta), log_psi=jnp.asarray(log_psi))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--particles", type=int, default=16)
    parser.add_argument("--horizon", type=int, default=3)
    args = parser.parse_args()

    env = make("twx:coin", split="dev", max_steps=25)
    try:
        observation, info = env.reset(args.seed)
        print(env.task)
        visited = {room(observation)}
        twist = CoinTwist(visited)
        for step in range(args.steps):
            result = smcplan.plan(
                env.task,
                None,
                info["admissible_actions"],
                observation=observation,
                key=args.seed + step,
                proposal=explore_first,
                twist=twist,
                world_model="simulator",
                simulator=env.clone,
                weighting="twisted",
                choice="sample",  # j ~ Cat(W): the twisted target's draw
                num_particles=args.particles,
                horizon=args.horizon,
            )
            top = sorted(result.action_mass.items(), key=lambda kv: -kv[1])[:3]
            print(
                f"[{step}] > {result.action}   (mass: "
                + ", ".join(f"{a!r} {m:.2f}" for a, m in top)
                + ")"
            )
            observation, _reward, done, info = env.step(result.action)
            visited.add(room(observation))
            print("     " + " ".join(observation.split())[:110])
            if done:
                break
        cfg = result.config
        print(
            f"== won: {info['won']}, score {info['score']:.2f}, {step + 1} steps; planned with "
            f"proposal {cfg['proposal_kind']}, twist {cfg['progress']}, world model "
            f"{cfg['world_model_kind']} (oracle: {cfg['oracle']})"
        )
    finally:
        env.close()


if __name__ == "__main__":
    main()
