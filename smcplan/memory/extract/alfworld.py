"""Rule-based triplets from ALFWorld (TextWorld engine) feedback.

The sentence forms are those of ALFWorld's grammar ``alfworld/data/alfred.twl2`` (alfworld 0.4.2)
as printed by TextWorld's ``PddlEnv``, e.g.

* "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, ..., and a
  sinkbasin 1."              -> (cabinet 1, in, room) ...; (agent, at, room)
* "You arrive at countertop 1. On the countertop 1, you see a apple 1, and a knife 1."
                             -> (agent, at, countertop 1), (agent, visited, countertop 1),
                                (apple 1, on, countertop 1), (knife 1, on, countertop 1);
                                countertop 1 closed (its whole contents are listed)
* "You open the drawer 1. The drawer 1 is open. In it, you see nothing."
                             -> (agent, opened, drawer 1), (drawer 1, is, open); drawer 1 closed
* "You pick up the apple 1 from the countertop 1."  -> (apple 1, in, inventory), (agent, picked up,
  apple 1)
* "You move the apple 1 to the fridge 1."           -> (apple 1, in, fridge 1), (agent, put, apple
  1)
* "You heat/cool/clean the egg 1 using the microwave 1." -> (egg 1, is, hot|cold|clean), event
* "This is a hot and clean egg 1."                  -> (egg 1, is, hot), (egg 1, is, clean)
* "You are carrying: a apple 1." / "You are not carrying anything." -> inventory, closed
* "Nothing happens."                                -> nothing

Older ALFWorld builds print "You arrive at loc 5."; the receptacle named in the next sentence is
then taken as the place.  Receptacles of ALFRED's openable classes (``OPENABLE_CLASS_LIST`` in
``alfworld/gen/constants.py``: fridge, cabinet, microwave, drawer, safe, box) hold things *in*,
the others *on*.  Must not import torch/transformers/outlines/jax or ``smcplan.llm``/``envs``/
``planning``/``agents`` (nor alfworld itself: this is text processing).
"""

from __future__ import annotations

import re

from smcplan.memory.extract._common import Builder, Extraction, split_list

__all__ = ["extract", "OPENABLE"]

OPENABLE = frozenset({"fridge", "cabinet", "microwave", "drawer", "safe", "box"})

_N = r"([^.,;:!?\n]+?)"  # a name: no sentence punctuation
_LIST = r"([^.\n]*?)"  # a list of names up to the end of its sentence
_END = r"\.(?=\s|$)"

_ROOM = re.compile(
    r"You are in the middle of a room\. Looking quickly around you, you see " + _LIST + _END
)
_ARRIVE = re.compile(r"You arrive at " + _N + _END)
_ON = re.compile(r"On the " + _N + r", you see " + _LIST + _END)
_OPEN_IN = re.compile(r"The " + _N + r" is open\. In it, you see " + _LIST + _END)
_CLOSED = re.compile(r"The " + _N + r" is closed" + _END)
_OPENED = re.compile(r"You open the " + _N + _END)
_CLOSE = re.compile(r"You close the " + _N + _END)
_PICK = re.compile(r"You pick up the " + _N + r"(?: from the " + _N + r")?" + _END)
_MOVE = re.compile(r"You (?:move|put) the " + _N + r" (?:to|in/on|in|on) the " + _N + _END)
_CARRY = re.compile(r"You are carrying: " + _LIST + _END)
_EMPTY_HANDS = re.compile(r"You are not carrying anything" + _END)
_TREAT = re.compile(r"You (heat|cool|clean) the " + _N + r" using the " + _N + _END)
_SLICE = re.compile(r"You sliced? the " + _N + r" with the " + _N + _END)
_TOGGLE = re.compile(r"You turn (on|off) the " + _N + _END)
_THIS_IS = re.compile(r"This is an? ([^.\n]+?)" + _END)
_THIS_ON = re.compile(r"This " + _N + r" is (on|off)" + _END)
_FACING = re.compile(r"You are facing the " + _N + r"\. Next to it, you see " + _LIST + _END)

_TREAT_STATE = {
    "heat": ("hot", "heated"),
    "cool": ("cold", "cooled"),
    "clean": ("clean", "cleaned"),
}
_QUALIFIER = {"hot": ("hot",), "cold": ("cold",), "cool": ("cold",), "clean": ("clean",),
              "sliced": ("sliced",), "hot/cold": ("hot", "cold"), "normal": (), "and": ()}


def _holds_in(receptacle: str) -> str:
    base = re.sub(r"\s+\d+$", "", receptacle.strip().lower())
    return "in" if base in OPENABLE else "on"


def extract(observation: str, action: str | None = None, location: str | None = None) -> Extraction:
    """Triplets of one ALFWorld observation (``action`` and ``location`` are not needed here)."""
    text = observation.replace("-= Welcome to TextWorld, ALFRED! =-", "")
    text = text.split("Your task is to:", 1)[0]
    b = Builder()

    m = _ROOM.search(text)
    if m:
        b.add("agent", "at", "room")
        for item in split_list(m.group(1)):
            b.add(item, "in", "room")
    for m in _ARRIVE.finditer(text):
        place = m.group(1)
        if re.fullmatch(r"loc \d+", place.strip()):
            nxt = _ON.search(text, m.end()) or _OPEN_IN.search(text, m.end()) or _CLOSED.search(
                text, m.end())
            if nxt is None:
                continue
            place = nxt.group(1)
        b.add("agent", "at", place)
        b.add("agent", "visited", place)
    for m in _FACING.finditer(text):
        b.add("agent", "at", m.group(1))
        for item in split_list(m.group(2)):
            b.add(item, "at", m.group(1))
    for m in _ON.finditer(text):
        b.close(m.group(1))
        for item in split_list(m.group(2)):
            b.add(item, "on", m.group(1))
    for m in _OPENED.finditer(text):
        b.add("agent", "opened", m.group(1))
    for m in _OPEN_IN.finditer(text):
        b.add(m.group(1), "is", "open")
        b.close(m.group(1))
        for item in split_list(m.group(2)):
            b.add(item, "in", m.group(1))
    for m in _CLOSED.finditer(text):
        b.add(m.group(1), "is", "closed")
    for m in _CLOSE.finditer(text):
        b.add(m.group(1), "is", "closed")
        b.add("agent", "closed", m.group(1))
    for m in _PICK.finditer(text):
        b.add(m.group(1), "in", "inventory")
        b.add("agent", "picked up", m.group(1))
    for m in _MOVE.finditer(text):
        b.add(m.group(1), _holds_in(m.group(2)), m.group(2))
        b.add("agent", "put", m.group(1))
    for m in _CARRY.finditer(text):
        b.close("inventory")
        for item in split_list(m.group(1)):
            b.add(item, "in", "inventory")
    if _EMPTY_HANDS.search(text):
        b.close("inventory")
    for m in _TREAT.finditer(text):
        state, verb = _TREAT_STATE[m.group(1)]
        b.add(m.group(2), "is", state)
        b.add("agent", verb, m.group(2))
    for m in _SLICE.finditer(text):
        b.add(m.group(1), "is", "sliced")
        b.add("agent", "sliced", m.group(1))
    for m in _TOGGLE.finditer(text):
        b.add(m.group(2), "is", m.group(1))
        b.add("agent", f"turned {m.group(1)}", m.group(2))
    for m in _THIS_IS.finditer(text):
        words = m.group(1).split()
        states: list[str] = []
        while words and words[0] in _QUALIFIER and len(words) > 1:
            states.extend(_QUALIFIER[words.pop(0)])
        name = " ".join(words)
        for state in states:
            b.add(name, "is", state)
        rest = re.match(r"\s*In it, you see " + _LIST + _END, text[m.end():])
        if rest:
            b.close(name)
            for item in split_list(rest.group(1)):
                b.add(item, "in", name)
    for m in _THIS_ON.finditer(text):
        b.add(m.group(1), "is", m.group(2))
    return b.build()
