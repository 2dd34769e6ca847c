r"""What the agent's own place map says about one action: a sentence for the critic.

A critic that reads the task, the observation and an action must find in that text *when* the
action is right.  On TextWorldExpress the optimal path opens every closed door of a room before
it leaves it and never walks back into a visited room (docs/train_rlaw_rlvmr.md: a table of the
door state and "visited" learned from 40 dev gold paths ranks held-out gold actions with AUC
0.94), and those facts are spread over the observation, the retrieved triplets and the history.
The place map (:class:`smcplan.planning.places.PlaceMap`, read from the *real* observations
only, never from a simulator or a label) holds them; :func:`action_note` says them next to the
action:

* ``open door to d`` / ``close door to d`` / ``move d``: the state of the door to ``d`` of the
  current place by the map (closed, open, unknown), and for a move through no closed door where
  it leads (a place visited before, a place seen but not visited, or not known yet);
* the closed doors left in the current place (or that none is left);
* ``no step has been taken yet`` on the first step.

:class:`MapNotes` keeps the map of one episode (:meth:`MapNotes.reset` on the first observation,
:meth:`MapNotes.update` after each step) and notes the admissible actions; the RLAW agent passes
them to its critic with ``critic_notes=True``, and :func:`smcplan.train.critic.critic_labels`
writes the same notes into the critic's training examples (the map of each gold state read from
the episode's earlier gold steps), so a critic trained on them sees at run time what it saw in
training.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from smcplan.errors import InvalidArgumentError
from smcplan.games import GameRules
from smcplan.games.twx import DOOR_ACTION, known_exit
from smcplan.planning.places import PlaceMap, read_step

__all__ = ["action_note", "MapNotes", "episode_maps"]

_MOVE = re.compile(r"^(?:move|go) (\w+)$")


def action_note(m: PlaceMap, action: str, first_step: bool = False) -> str:
    """One sentence (ending in a period; empty when the map says nothing) of what ``m`` says
    about ``action`` in the map's current place (module docstring)."""
    parts = ["no step has been taken yet"] if first_step else []
    place = m.place
    if place is None:
        return (parts[0].capitalize() + ".") if parts else ""
    a = " ".join(str(action).strip().lower().split())
    door = DOOR_ACTION.match(a)
    move = _MOVE.match(a)
    direction = door.group(2) if door else move.group(1) if move else None
    if direction is not None:
        state = m.doors.get((place, direction))
        if door and door.group(1) == "open":
            if state == "closed":
                parts.append(f"the door to the {direction} is closed")
            elif state == "open":
                parts.append(f"the door to the {direction} is already open")
        elif door:
            if state == "open":
                parts.append(f"the door to the {direction} is open")
            elif state == "closed":
                parts.append(f"the door to the {direction} is already closed")
        elif state == "closed":
            parts.append(f"the door to the {direction} is closed")
        else:
            there = known_exit(m, place, a)
            if there is None:
                parts.append(f"where the {direction} leads is not known yet")
            elif there in m.visited:
                parts.append(f"it leads back to the {there}, visited before")
            else:
                parts.append(f"it leads to the {there}, not visited yet")
    closed = sorted(d for (p, d), s in m.doors.items() if p == place and s == "closed")
    if closed:
        sides = ", ".join(f"to the {d}" for d in closed)
        parts.append(f"closed doors left in the {place}: {sides}")
    else:
        parts.append(f"no closed door is left in the {place}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


class MapNotes:
    """The place map of one episode, read from its real observations, and the notes of
    :func:`action_note` on it (module docstring)."""

    def __init__(self, env_kind: GameRules | str = "auto") -> None:
        self.env_kind = env_kind
        self.map = PlaceMap()
        self.steps = 0

    def reset(self, observation: str) -> None:
        """Start an episode on its first observation."""
        self.map = read_step(PlaceMap(), None, observation, self.env_kind)
        self.steps = 0

    def update(self, action: str, observation: str) -> None:
        """Read the real ``observation`` that followed ``action``."""
        self.map = read_step(self.map, action, observation, self.env_kind)
        self.steps += 1

    def notes(self, actions: Iterable[str]) -> list[str]:
        """The note of each action, in order."""
        return [action_note(self.map, a, first_step=self.steps == 0) for a in actions]


def episode_maps(
    transitions: Iterable[Mapping[str, Any]], env_kind: GameRules | str = "auto"
) -> dict[tuple[str, int], PlaceMap]:
    """The place map before each step of shard ``transitions`` (``{"episode", "t",
    "observation", "action", "next_observation"}``), ``{(episode, t): PlaceMap}``, each read from
    the episode's earlier steps only; an episode must list its steps from t = 0 without gaps
    (a gold shard does), else the maps would miss what the absent steps saw."""
    episodes: dict[str, list[Mapping[str, Any]]] = {}
    for tr in transitions:
        episodes.setdefault(str(tr["episode"]), []).append(tr)
    maps: dict[tuple[str, int], PlaceMap] = {}
    for name, steps in episodes.items():
        steps = sorted(steps, key=lambda tr: int(tr["t"]))
        ts = [int(tr["t"]) for tr in steps]
        if ts != list(range(len(ts))):
            raise InvalidArgumentError(
                f"transitions: episode {name!r} has steps {ts[:8]}...; the place maps need "
                "every step from t = 0 (give the whole shard, not a sample of it)"
            )
        m = read_step(PlaceMap(), None, str(steps[0]["observation"]), env_kind)
        for tr in steps:
            maps[(name, int(tr["t"]))] = m
            m = read_step(m, str(tr["action"]), str(tr["next_observation"]), env_kind)
    return maps
