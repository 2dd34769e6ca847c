"""Three rooms worded as TextWorldExpress coin words them, for the policy head's map notes.

The kitchen (the start) has a closed wood door to the north, behind it the pantry with the
coin, and an open way west to the hallway (a dead end).  Best path: ``open door to north``,
``move north``, ``take coin``.  The place map (:mod:`smcplan.agents.map_notes`) reads these
observations as it reads TextWorldExpress's (the door's state, where a move leads, the rooms
visited), so its notes change along an episode; the corridor of ``toy_corridor`` has no
sentence the map reads.  Every draw of an episode comes from the agent: the env has none.
"""

from __future__ import annotations

TASK = (
    "Your task is to search the environment and find the coin.  Once you find the coin, take "
    "it.  The coin should be in one of the rooms."
)
KITCHEN = "You are in the kitchen. In one part of the room you see a stove. "
SIDES = {
    False: "To the North you see a closed wood door. To the West you see the hallway. ",
    True: "Through an open wood door, to the North you see the pantry. To the West you see the "
    "hallway. ",
}
HALLWAY = "You are in the hallway. In one part of the room you see a coat rack. \nTo the East "
PANTRY = "You are in the pantry. In one part of the room you see a shelf. "
MOVES = {("kitchen", "move west"): "hallway", ("hallway", "move east"): "kitchen",
         ("kitchen", "move north"): "pantry", ("pantry", "move south"): "kitchen"}  # fmt: skip


class Rooms:
    """``reset(seed)``, ``step(action)``, ``task``, ``close()``; ``horizon`` steps at most."""

    task = TASK

    def __init__(self, horizon: int = 5) -> None:
        self.horizon = horizon

    def _observe(self) -> str:
        if self.place == "kitchen":
            return KITCHEN + "\n" + SIDES[self.door]
        if self.place == "hallway":
            return HALLWAY + "you see the kitchen. "
        coin = "" if self.taken else "In another part of the room you see a coin. "
        return PANTRY + coin + "\nThrough an open wood door, to the South you see the kitchen. "

    def _admissible(self) -> list[str]:
        common = ["inventory", "look around"]
        if self.place == "kitchen":
            door = "close door to north" if self.door else "open door to north"
            return [door, "move north", "move west", *common]
        if self.place == "hallway":
            return ["move east", *common]
        return ["close door to south", "move south", *(["take coin"] if not self.taken else []),
                *common]  # fmt: skip

    def _info(self) -> dict:
        return {"admissible_actions": self._admissible(), "won": self.taken,
                "score": float(self.taken), "invalid": False}  # fmt: skip

    def reset(self, seed: int):
        self.place, self.door, self.taken, self.t = "kitchen", False, False, 0
        return self._observe(), self._info()

    def step(self, action: str):
        if action not in self._admissible():
            raise ValueError(f"{action!r} is not admissible in the {self.place}")
        self.t += 1
        obs = None
        if action == "open door to north":
            self.door, obs = True, "You open the wood door, revealing the pantry. "
        elif action == "close door to north":
            self.door, obs = False, "You close the wood door. "
        elif action == "close door to south":
            self.door, obs = False, "You close the wood door. "
        elif action == "take coin":
            self.taken, obs = True, "You take the coin."
        elif action == "inventory":
            obs = "You are carrying nothing." if not self.taken else "You are carrying: a coin."
        elif action.startswith("move "):
            there = MOVES[(self.place, action)]
            if {self.place, there} == {"kitchen", "pantry"} and not self.door:
                obs = "You can't move there, the door is closed. "
            else:
                self.place = there
        obs = obs if obs is not None else self._observe()
        done = self.taken or self.t >= self.horizon
        return obs, float(self.taken), done, self._info()

    def close(self) -> None:
        pass
