"""How a uniformly random agent does on twx:coin as the map grows (docs/ablation.md, "The coin
configuration and the random agent").

    python scripts/random_coin_sizes.py [--episodes 50] [--seed 0]

Plays dev seeds 10000.. with TWX's own random policy (``random.choice(sorted(validActions))``,
as TextWorldExpress's examples/random_agent.py) for 25 and 50 steps under several generation
parameters, and prints SR per setting and the action mix of the default setting.  One JVM; a few
seconds per setting.
"""

from __future__ import annotations

import argparse
import collections
import random

from smcplan.envs import make

SETTINGS = (
    "",  # the TWX defaults: numLocations=11, includeDoors=1, numDistractorItems=0
    "includeDoors=0",
    "numLocations=5",
    "numLocations=4",
    "numLocations=3",
)


def play(params: str, steps: int, episodes: int, seed: int) -> tuple[int, collections.Counter]:
    env = make("twx:coin", params=params or None)
    rng, wins, verbs = random.Random(seed), 0, collections.Counter()
    try:
        for s in range(10000, 10000 + episodes):
            _obs, info = env.reset(seed=s)
            actions = info["admissible_actions"]
            for _ in range(steps):
                a = rng.choice(sorted(actions))
                verbs[a.split()[0]] += 1
                _obs, _r, done, info = env.step(a)
                actions = info.get("admissible_actions") or env.admissible_actions()
                if done:
                    wins += bool(info.get("won"))
                    break
    finally:
        env.close()
    return wins, verbs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| params | steps | won | SR % |")
    print("|---|---|---|---|")
    mix = None
    for params in SETTINGS:
        for steps in (25, 50):
            wins, verbs = play(params, steps, args.episodes, args.seed)
            mix = mix or verbs
            print(
                f"| {params or 'TWX defaults'} | {steps} | {wins}/{args.episodes} "
                f"| {100 * wins / args.episodes:.0f} |"
            )
    total = sum(mix.values())
    print(
        "action mix (defaults, 25 steps):",
        ", ".join(f"{v} {100 * n / total:.0f}%" for v, n in mix.most_common()),
    )


if __name__ == "__main__":
    main()
