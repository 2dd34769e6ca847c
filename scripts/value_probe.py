"""Score hand-written states with value heads: what does a head prefer, and why?

    python scripts/value_probe.py --head runs/i53/alf/pick-value/head \\
        --task "Your task is to: put a kettle in countertop." \\
        --fact "countertop 1|in|room" --fact "cabinet 1|in|room" \\
        "You pick up the kettle 1 from the cabinet 1." "You are carrying: a knife 1."

Each observation is rendered as the planner renders a particle's latest state (task, facts,
observation: ``smcplan.planning.text_particle.render_context``) and scored by every ``--head``
on the embedded SmolLM2 (``ValueModel``); one line per observation, one column per head.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("observations", nargs="+", help="the latest observation of each state")
    parser.add_argument("--head", action="append", required=True, help="a value head folder")
    parser.add_argument("--task", required=True)
    parser.add_argument("--fact", action="append", default=[], help="subject|predicate|object")
    parser.add_argument("--model", default=None, help="base model (default: the embedded one)")
    args = parser.parse_args(argv)
    facts = []
    for fact in args.fact:
        parts = fact.split("|")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            print(f"value_probe: --fact {fact!r}: give subject|predicate|object", file=sys.stderr)
            return 2
        facts.append(tuple(p.strip() for p in parts))

    from smcplan.errors import SmcplanError
    from smcplan.llm import load_model
    from smcplan.llm.roles.value_head import ValueModel, load_value_head
    from smcplan.planning.text_particle import render_context

    try:
        heads = [load_value_head(head) for head in args.head]  # refused before the model loads
        lm = load_model(args.model)
        models = [ValueModel(lm, head) for head in heads]
    except SmcplanError as err:
        print(f"value_probe: {err}", file=sys.stderr)
        return 2
    contexts = [render_context(args.task, facts, obs) for obs in args.observations]
    columns = [model(contexts) for model in models]
    print("\t".join([*(f"head {i + 1}" for i in range(len(models))), "observation"]))
    for row, obs in enumerate(args.observations):
        print("\t".join([*(f"{float(col[row]):.3f}" for col in columns), obs]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
