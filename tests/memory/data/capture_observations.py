"""Capture real observation strings from the three benchmark engines for the extractor tests.

Run from the repository root (needs ``smcplan[bench]`` and Java 17; about 30 s):

    .venv/bin/python tests/memory/data/capture_observations.py

It writes, next to itself:

* ``twx_observations.json``: TextWorldExpress (``textworld_express.TextWorldExpressEnv``), games
  coin, cookingworld, twc and mapreader: the task, the first observation and the observation after
  each gold action, then ``look``/``inventory``; plus one scripted exploration (open containers).
* ``scienceworld_observations.json``: ScienceWorld (``scienceworld.ScienceWorldEnv``), tasks boil,
  find-living-thing and melt, the same way, plus one scripted exploration.
* ``alfworld_observations.json``: the ALFWorld text engine itself (TextWorld's ``PddlEnv`` with
  ALFWorld's ``alfworld/data/alfred.pddl`` domain and ``alfworld/data/alfred.twl2`` grammar, names
  demangled by ``alfworld.agents.environment.alfred_tw_env.AlfredDemangler``) on a small
  hand-written
  PDDL problem (a kitchen with a countertop, drawer, fridge, microwave, sink basin, cabinet and side
  table).  ALFWorld's own game files need the ALFRED data download, which is not available offline;
  the feedback sentences are nonetheless exactly those the engine prints, since they come from the
  same grammar and engine.  It then adds gold trajectories of three games generated offline by
  ``smcplan.envs.make("alfworld:<task type>")`` (ALFRED-like layouts, same engine).

Both JVMs are closed at the end (``env.close()`` in ``finally``).  The games are seeded, but
TextWorldExpress's gold path for coin (seed 3) has differed between captures (a detour of two
moves), so a re-capture may change that record; the tests replay whatever was stored.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

# (game, seed, params, scripted actions or None for the gold path)
TWX_EPISODES = [
    ("coin", 0, "numLocations=4,numDistractorItems=2,includeDoors=1,limitInventorySize=0", None),
    ("coin", 3, "numLocations=6,numDistractorItems=3,includeDoors=1,limitInventorySize=0", None),
    (
        "cookingworld",
        1,
        "numLocations=3,numIngredients=2,numDistractorItems=2,includeDoors=1,limitInventorySize=0",
        None,
    ),
    ("twc", 2, "numLocations=2,numItemsToPutAway=2,includeDoors=1,limitInventorySize=0", None),
    (
        "mapreader",
        4,
        "numLocations=5,maxDistanceApart=3,includeDoors=0,maxDistractorItemsPerLocation=2",
        None,
    ),
    (
        "cookingworld",
        0,
        "numLocations=1,numIngredients=4,numDistractorItems=4,includeDoors=0,limitInventorySize=0",
        [
            "open fridge",
            "look around",
            "open kitchen cupboard",
            "open cutlery drawer",
            "take knife",
            "inventory",
            "close fridge",
            "look around",
        ],
    ),
]

# (task, variation, max gold steps, scripted actions or None for the gold path)
SCIWORLD_EPISODES = [
    ("boil", 0, 12, None),
    ("find-living-thing", 0, 12, None),
    ("melt", 0, 8, None),
    ("boil", 0, 0,
     ["open door to kitchen", "go to kitchen", "open fridge", "look at fridge", "open freezer",
      "close fridge", "look at fridge", "look at counter", "inventory", "activate stove",
      "go to hallway", "look around"]),
]


def capture_twx() -> list[dict]:
    from textworld_express import TextWorldExpressEnv

    env = TextWorldExpressEnv(envStepLimit=100)
    records = []
    try:
        for game, seed, params, script in TWX_EPISODES:
            obs, info = env.reset(seed=seed, gameFold="train", gameName=game, gameParams=params,
                                  generateGoldPath=True)
            steps = [{"action": None, "observation": obs}]
            for action in script if script is not None else env.getGoldActionSequence():
                obs, _, done, info = env.step(action)
                steps.append({"action": action, "observation": obs})
                if done:
                    break
            records.append({"game": game, "seed": seed, "params": params,
                            "actions": "scripted" if script else "gold",
                            "task": info["taskDescription"], "look": info["look"],
                            "inventory": info["inventory"], "steps": steps})
    finally:
        env.close()
    return records


def capture_scienceworld() -> list[dict]:
    from scienceworld import ScienceWorldEnv

    env = ScienceWorldEnv("", envStepLimit=100)
    records = []
    try:
        for task, variation, max_steps, script in SCIWORLD_EPISODES:
            env.load(task, variation, "", generateGoldPath=True)
            obs, info = env.reset()
            steps = [{"action": None, "observation": obs}]
            actions = script if script is not None else env.get_gold_action_sequence()[:max_steps]
            for action in actions:
                obs, _, done, info = env.step(action)
                steps.append({"action": action, "observation": obs})
                if done:
                    break
            records.append({"task_name": task, "variation": variation,
                            "actions": "scripted" if script else "gold",
                            "task": env.get_task_description(), "look": env.look(),
                            "inventory": env.inventory(), "steps": steps})
    finally:
        env.close()
    return records


def _alfred_id(name: str, k: int) -> str:
    """An ALFRED-style mangled object id, e.g. ``Apple_bar__minus_01_dot_50_bar__plus_00_dot_90``.
    """
    return f"{name}_bar__minus_0{k}_dot_50_bar__plus_00_dot_90_bar__plus_01_dot_25"


ALFWORLD_ACTIONS = [
    "look", "go to countertop 1", "examine countertop 1", "take apple 1 from countertop 1",
    "inventory", "examine apple 1", "go to drawer 1", "open drawer 1", "close drawer 1",
    "go to fridge 1", "open fridge 1", "cool apple 1 with fridge 1", "examine apple 1",
    "move apple 1 to fridge 1", "take egg 1 from fridge 1", "go to microwave 1",
    "heat egg 1 with microwave 1", "go to sinkbasin 1", "clean egg 1 with sinkbasin 1",
    "examine egg 1", "go to cabinet 1", "open cabinet 1", "move egg 1 to cabinet 1",
    "go to sidetable 1", "use desklamp 1", "use desklamp 1", "look", "inventory", "jump",
]


def capture_alfworld() -> list[dict]:
    import alfworld
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs.pddl import PddlEnv

    data = Path(alfworld.__file__).parent / "data"
    rec = {r: _alfred_id(r, 1) for r in
           ["CounterTop", "Drawer", "Fridge", "Microwave", "SinkBasin", "Cabinet", "SideTable"]}
    # ALFRED names a sink basin after its sink: "Sink_bar_<xyz>_bar_SinkBasin" -> "sinkbasin 1".
    rec["SinkBasin"] = _alfred_id("Sink", 1) + "_bar_SinkBasin"
    obj = {"Apple": _alfred_id("Apple", 1), "Knife": _alfred_id("Knife", 2),
           "Egg": _alfred_id("Egg", 3), "Mug": _alfred_id("Mug", 4),
           "DeskLamp": _alfred_id("DeskLamp", 5)}
    where = {"Apple": "CounterTop", "Knife": "CounterTop", "Egg": "Fridge", "Mug": "Cabinet",
             "DeskLamp": "SideTable"}
    init = ["(atLocation agent1 loc_start)"]
    for r, rid in rec.items():
        init += [f"(receptacleAtLocation {rid} loc_{r.lower()})", f"(receptacleType {rid} {r}Type)"]
        if r in ("Drawer", "Fridge", "Microwave", "Cabinet"):
            init.append(f"(openable {rid})")
        for o in obj:
            init.append(f"(canContain {r}Type {o}Type)")
    for o, oid in obj.items():
        r = where[o]
        init += [f"(inReceptacle {oid} {rec[r]})", f"(objectAtLocation {oid} loc_{r.lower()})",
                 f"(objectType {oid} {o}Type)"]
        init.append(f"(toggleable {oid})" if o == "DeskLamp" else f"(pickupable {oid})")
    init += [f"(coolable {obj['Apple']})", f"(heatable {obj['Egg']})", f"(cleanable {obj['Egg']})"]
    locations = ["loc_start"] + [f"loc_{r.lower()}" for r in rec]
    problem = "\n".join(
        [
            "(define (problem smcplan_kg_capture)",
            " (:domain alfred)",
            " (:objects",
            "  agent1 - agent",
            f"  {' '.join(locations)} - location",
            f"  {' '.join(rec.values())} - receptacle",
            f"  {' '.join(obj.values())} - object",
            f"  {' '.join(r + 'Type' for r in rec)} - rtype",
            f"  {' '.join(o + 'Type' for o in obj)} - otype",
            " )",
            f" (:init {' '.join(init)})",
            f" (:goal (inReceptacle {obj['Egg']} {rec['Cabinet']}))",
            ")",
        ]
    )

    env = AlfredDemangler(PddlEnv(textworld.EnvInfos(admissible_commands=True)))
    env.load({"pddl_domain": (data / "alfred.pddl").read_text(),
              "grammar": (data / "alfred.twl2").read_text(), "pddl_problem": problem})
    state = env.reset()
    steps = [{"action": None, "observation": state.feedback}]
    for action in ALFWORLD_ACTIONS:
        admissible = action in state["admissible_commands"]
        state, _, _ = env.step(action)
        steps.append({"action": action, "admissible": admissible, "observation": state.feedback})
    env.close()
    return [{"engine": "textworld.envs.pddl.PddlEnv + alfworld/data/alfred.{pddl,twl2}",
             "pddl_problem": problem, "steps": steps}]


ALFWORLD_GENERATED = [("pick_heat_then_place", 0), ("pick_cool_then_place", 1),
                      ("look_at_obj_in_light", 0)]


def capture_alfworld_generated() -> list[dict]:
    from smcplan.envs import make

    records = []
    for task_type, seed in ALFWORLD_GENERATED:
        env = make(f"alfworld:{task_type}")
        try:
            obs, _ = env.reset(seed=seed)
            steps = [{"action": None, "observation": obs}]
            for action in env.gold_actions() or []:
                result = env.step(action)
                steps.append({"action": action, "observation": result.observation})
                if result.done:
                    break
            records.append({"engine": f"smcplan.envs.make('alfworld:{task_type}')", "seed": seed,
                            "task": env.task, "steps": steps})
        finally:
            env.close()
    return records


def main() -> None:
    alfworld_records = capture_alfworld() + capture_alfworld_generated()
    (HERE / "alfworld_observations.json").write_text(json.dumps(alfworld_records, indent=1) + "\n")
    (HERE / "twx_observations.json").write_text(json.dumps(capture_twx(), indent=1) + "\n")
    (HERE / "scienceworld_observations.json").write_text(
        json.dumps(capture_scienceworld(), indent=1) + "\n")


if __name__ == "__main__":
    main()
