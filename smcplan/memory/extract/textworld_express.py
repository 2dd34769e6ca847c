"""Rule-based triplets from TextWorldExpress (coin, cookingworld, twc, mapreader) observations.

Forms, as printed by ``textworld_express`` 1.1.0 (captured in
``tests/memory/data/twx_observations.json``):

* room: "You are in the kitchen. In one part of the room you see a stove. There is also an oven.
  You also see a fridge that is closed. In another part of the room you see a counter that has a
  knife, and a cookbook on it. ... An open fridge, that contains a red onion ... an open cutlery
  drawer, that is empty ..." then exits "To the North you see a closed frosted-glass door. To the
  West you see the corridor. Through an open wood door, to the South you see the bedroom."
  -> (agent, in, kitchen), (stove, in, kitchen), (fridge, is, closed), (knife, on, counter),
  (red onion, in, fridge), (kitchen, north door, closed), (kitchen, west, corridor),
  (kitchen, south door, open), (kitchen, south, bedroom); the room and every container whose
  contents are listed are closed
* "You take the coin." -> (coin, in, inventory), (agent, took, coin)
* "You put the coin in the box." -> (coin, in, box), (agent, put, coin)
* "You open the fridge. The fridge contains a raw chicken wing, ..." / "It's empty inside."
* "You open the wood door, revealing the bedroom." with action "open door to north" and the
  agent's room known -> (room, north door, open), (room, north, bedroom)
* "You dice the white onion." / "You roast the white onion with the oven." -> (white onion, is,
  diced|roasted), event
* "Inventory: \\n  a coin\\n" -> (coin, in, inventory); inventory closed
* the cookbook ("Ingredients: ... Directions: ...") -> (recipe, needs, x), (recipe, direction, y)
* the map ("The bathroom connects to the shower, bedroom and canteen.") -> (bathroom, connects
  to, shower) ...

Must not import torch/transformers/outlines/jax or ``smcplan.llm``/``envs``/``planning``/
``agents`` (nor textworld_express itself: this is text processing).
"""

from __future__ import annotations

import re

from smcplan.memory.extract._common import Builder, Extraction, clean_name, split_list

__all__ = ["extract"]

_N = r"([^.,;:!?\n]+?)"
_END = r"\.(?=\s|$)"

_ROOM = re.compile(r"You are in the " + _N + r"\.(?:\s|$)")  # also a bare "You are in the X."
_ITEM_PREFIX = re.compile(
    r"^(?:In one part of the room you see|In another part of the room you see|There is also|"
    r"You also see)\s+(.*)$"
)
_CLAUSE = re.compile(r"^(.+?),? that (.+)$")
_EXIT_DOOR = re.compile(r"To the (\w+) you see an? (closed|open|locked) ([^.\n]+?door)" + _END)
_EXIT_ROOM = re.compile(r"To the (\w+) you see the " + _N + _END)
_THROUGH = re.compile(
    r"Through an? (?:(open|closed) )?([^,\n]+?door), to the (\w+) you see the " + _N + _END)
_TAKE = re.compile(r"You take the " + _N + _END)
_PUT = re.compile(r"You put the " + _N + r" (in|on) the " + _N + _END)
_OPEN = re.compile(r"You open the " + _N + r"(?:, revealing the " + _N + r")?" + r"\.(?:\s|$)")
_CONTAINS = re.compile(r"The " + _N + r" contains ([^\n]*?)" + _END)
_EMPTY_INSIDE = re.compile(r"It's empty inside" + _END)
_CLOSE = re.compile(r"You close the " + _N + _END)
_PREPARE = re.compile(
    r"You (dice|slice|chop|roast|fry|grill|bake) the " + _N + r"(?: with the " + _N + r")?" + _END
)
_ADD_INV = re.compile(r"Adding the " + _N + r" to your inventory" + _END)
_EAT = re.compile(r"You eat the " + _N + _END)
_INVENTORY = re.compile(r"Inventory:\s*\n((?:[ \t]+[^\n]*\n?)*)")
_RECIPE = re.compile(r"Ingredients:\s*\n(.*?)\n\s*\nDirections:\s*\n(.*?)(?:\n\s*\n|$)", re.S)
_MAP_LINE = re.compile(r"The " + _N + r" connects to (?:the )?([^\n]+?)" + _END)
_DIRECTION_ACTION = re.compile(r"^(?:open|close) door to (\w+)$")

_PARTICIPLE = {"dice": "diced", "slice": "sliced", "chop": "chopped", "roast": "roasted",
               "fry": "fried", "grill": "grilled", "bake": "baked"}
_DIRECTIONS = ("north", "south", "east", "west")


def _sentences(text: str) -> list[str]:
    """Split a room paragraph at ". " (items never contain a full stop)."""
    return [s.strip() for s in re.split(r"\.\s+", text) if s.strip()]


def _item(phrase: str, room: str, b: Builder) -> None:
    """One "a counter, that has a knife on it" / "An open fridge, that contains ..." phrase."""
    phrase = phrase.strip().rstrip(".")
    m = _CLAUSE.match(phrase)
    name, clause = (m.group(1), m.group(2)) if m else (phrase, "")
    low = clean_name(name)
    state = None
    for adj in ("open", "closed"):
        if low.startswith(adj + " "):
            state, low = adj, low[len(adj) + 1:]
    b.add(low, "in", room)
    if state:
        b.add(low, "is", state)
    if not clause:
        return
    if clause in ("is closed", "is open", "is locked"):
        b.add(low, "is", clause[3:])
    elif clause == "is empty":
        b.close(low)
    elif clause == "has nothing on it":
        b.close(low)
    elif clause.startswith("has ") and clause.endswith(" on it"):
        b.close(low)
        for thing in split_list(clause[4:-6]):
            b.add(thing, "on", low)
    elif clause.startswith("contains "):
        b.close(low)
        for thing in split_list(clause[9:]):
            b.add(thing, "in", low)


def _room(text: str, b: Builder) -> str | None:
    m = _ROOM.search(text)
    if not m:
        return None
    room = clean_name(m.group(1))
    b.add("agent", "in", room)
    b.close(room)
    body, _, exits = text[m.end():].partition("\n")
    for sentence in _sentences(body):
        im = _ITEM_PREFIX.match(sentence)
        if im:
            _item(im.group(1), room, b)
    for m in _EXIT_DOOR.finditer(exits):
        b.add(room, f"{m.group(1).lower()} door", m.group(2))
    for m in _EXIT_ROOM.finditer(exits):
        b.add(room, m.group(1).lower(), m.group(2))
    for m in _THROUGH.finditer(exits):
        direction = m.group(3).lower()
        if m.group(1):
            b.add(room, f"{direction} door", m.group(1))
        b.add(room, direction, m.group(4))
    return room


def extract(observation: str, action: str | None = None, location: str | None = None) -> Extraction:
    """Triplets of one TextWorldExpress observation.

    ``action`` and ``location`` (the agent's room, e.g. from the graph) name the door in "You open
    the wood door, revealing the bedroom." after "open door to north"; without them the door is
    named by its own name.
    """
    text = observation.replace("\r", "")
    b = Builder()
    _room(text, b)
    direction = None
    if action:
        dm = _DIRECTION_ACTION.match(action.strip().lower())
        direction = dm.group(1) if dm and dm.group(1) in _DIRECTIONS else None
    for m in _TAKE.finditer(text):
        b.add(m.group(1), "in", "inventory")
        b.add("agent", "took", m.group(1))
    for m in _PUT.finditer(text):
        b.add(m.group(1), m.group(2), m.group(3))
        b.add("agent", "put", m.group(1))
    for m in _OPEN.finditer(text):
        thing, beyond = m.group(1), m.group(2)
        if thing.endswith("door") and direction and location:
            b.add(location, f"{direction} door", "open")
            if beyond:
                b.add(location, direction, beyond)
        else:
            b.add(thing, "is", "open")
        b.add("agent", "opened", thing)
        rest = text[m.end():]
        if _EMPTY_INSIDE.match(rest.lstrip()):
            b.close(thing)
    for m in _CONTAINS.finditer(text):
        b.close(m.group(1))
        for thing in split_list(m.group(2)):
            b.add(thing, "in", m.group(1))
    for m in _CLOSE.finditer(text):
        thing = m.group(1)
        if thing.endswith("door") and direction and location:
            b.add(location, f"{direction} door", "closed")
        else:
            b.add(thing, "is", "closed")
        b.add("agent", "closed", thing)
    for m in _PREPARE.finditer(text):
        b.add(m.group(2), "is", _PARTICIPLE[m.group(1)])
        b.add("agent", _PARTICIPLE[m.group(1)], m.group(2))
    for m in _ADD_INV.finditer(text):
        b.add(m.group(1), "in", "inventory")
        b.add("agent", "prepared", m.group(1))
    for m in _EAT.finditer(text):
        b.add(m.group(1), "is", "eaten")
        b.add("agent", "ate", m.group(1))
    m = _INVENTORY.search(text)
    if m:
        b.close("inventory")
        for line in m.group(1).splitlines():
            line = line.strip()
            if line and not line.startswith("Your inventory is currently empty"):
                b.add(line, "in", "inventory")
    m = _RECIPE.search(text)
    if m:
        for line in m.group(1).splitlines():
            if line.strip():
                b.add("recipe", "needs", line)
        for line in m.group(2).splitlines():
            if line.strip():
                b.add("recipe", "direction", line)
    if "The map reads:" in text:
        for m in _MAP_LINE.finditer(text):
            for other in split_list(m.group(2), bare_and=True):
                b.add(m.group(1), "connects to", other)
    return b.build()
