"""Rule-based triplets from ScienceWorld observations (room descriptions, inventory, feedback).

Forms, as printed by ``scienceworld`` 1.2.3 (captured in
``tests/memory/data/scienceworld_observations.json``):

* "This room is called the kitchen. In it, you see: \\n\\tthe agent\\n\\ta substance called air\\n
  \\ta counter. On the counter is: a bowl (containing a red apple, a banana), a drawer.\\n
  \\ta cupboard. The cupboard door is open. In the cupboard is: a tin cup (containing nothing).\\n
  \\ta oven, which is turned off. The oven door is closed. \\n\\ta thermometer, currently reading a
  temperature of 10 degrees celsius\\nYou also see:\\n\\tA door to the hallway (that is open)"
  -> (agent, in, kitchen), (air, in, kitchen), (counter, in, kitchen), (bowl, on, counter),
  (red apple, in, bowl), (cupboard, is, open), (oven, is, off), (oven, is, closed),
  (thermometer, reads, 10 degrees celsius), (kitchen, connects to, hallway),
  (door between hallway and kitchen, is, open); the room and every listed container are closed
* "This outside location is called the outside. Here you see: ..." (the same)
* "In your inventory, you see:\\n\\ta metal pot (containing a substance called water)" -> inventory
* "a fridge. The fridge door is open. In the fridge is: ..." (after "look at fridge")
* "You move to the kitchen." -> (agent, in, kitchen);  "You move the metal pot to the sink." ->
  (metal pot, in, sink);  "The cupboard is now open." -> (cupboard, is, open);
  "The sink is now activated." -> (sink, is, on);  "You focus on the water." -> event
* "The door is now open." after "open door to kitchen", with the agent's room known ->
  (door between hallway and kitchen, is, open)

"Turned on"/"activated" are read as ``on`` and "turned off"/"deactivated" as ``off``; doors are
named by the two rooms they join, sorted, so both sides name the same door.  Must not import
torch/transformers/outlines/jax or ``smcplan.llm``/``envs``/``planning``/``agents`` (nor
scienceworld itself: this is text processing).
"""

from __future__ import annotations

import re

from smcplan.memory.extract._common import Builder, Extraction, clean_name, split_list

__all__ = ["extract", "door_name"]

_N = r"([^.,;:!?\n]+?)"
_END = r"\.(?=\s|$)"

_ROOM = re.compile(
    r"This (?:room|outside location|location) is called the " + _N
    + r"\. (?:In it, you see|Here you see):[ \t]*\n(.*?)(?:\nYou also see:[ \t]*\n(.*))?$", re.S)
_INVENTORY = re.compile(r"In your inventory, you see:[ \t]*\n(.*)$", re.S)
_MOVE_SELF = re.compile(r"You move to the " + _N + _END)
_MOVE_THING = re.compile(r"You move the " + _N + r" to the " + _N + _END)
_NOW = re.compile(r"The " + _N + r" is now (open|closed|activated|deactivated|on|off)" + _END)
_FOCUS = re.compile(r"You focus on the " + _N + _END)
_DOOR_LINE = re.compile(r"^an? door to (?:the )?(.+?) \(that is (open|closed|locked)\)$", re.I)
_DOOR_ACTION = re.compile(r"^(?:open|close) door to (?:the )?(.+)$")
_STATE_CLAUSE = re.compile(
    r",\s*which is (turned on|turned off|activated|deactivated|on|off)", re.I
)
_READING = re.compile(r",\s*currently reading a temperature of ([^,()]+)", re.I)
_ON_IN = re.compile(r"^(On|In) the (.+?) is:\s*(.*)$", re.S)
_DOOR_STATE = re.compile(r"^The (.+?) door is (open|closed)$")
_LOOK_AT = re.compile(r"^look at (.+)$")

_SWITCH = {"turned on": "on", "activated": "on", "on": "on",
           "turned off": "off", "deactivated": "off", "off": "off"}


def door_name(room_a: str, room_b: str) -> str:
    """The one name of the door between two rooms, whichever side it is seen from."""
    a, b = sorted((clean_name(room_a), clean_name(room_b)))
    return f"door between {a} and {b}"


def _split_top(text: str, sep: str) -> tuple[str, str]:
    """Split at the first ``sep`` outside parentheses: ``(head, tail)``."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(sep, i):
            return text[:i], text[i + len(sep):]
    return text, ""


def _item(desc: str, container: str | None, prep: str, b: Builder) -> str:
    """Parse one object description (recursively); returns its name."""
    desc = desc.strip().strip("\t").strip()
    head, tail = _split_top(desc, ". ")
    head = head.rstrip(". ")
    contents = None
    if head.endswith(")"):
        depth, start = 0, None
        for i in range(len(head) - 1, -1, -1):
            if head[i] == ")":
                depth += 1
            elif head[i] == "(":
                depth -= 1
                if depth == 0:
                    start = i
                    break
        if start is not None and head[start + 1:].startswith("containing "):
            contents = head[start + 1 + len("containing "):-1]
            head = head[:start].rstrip()
    state = _STATE_CLAUSE.search(head)
    reading = _READING.search(head)
    cut = min((m.start() for m in (state, reading) if m), default=len(head))
    name = clean_name(head[:cut])
    if not name:
        return ""
    if container is not None:
        b.add(name, prep, container)
    if state:
        b.add(name, "is", _SWITCH[state.group(1).lower()])
    if reading:
        b.add(name, "reads", reading.group(1))
    if contents is not None:
        b.close(name)
        for thing in split_list(contents):
            _item(thing, name, "in", b)
    for sentence in _sentences(tail):
        m = _DOOR_STATE.match(sentence)
        if m:
            b.add(m.group(1), "is", m.group(2))
            continue
        m = _ON_IN.match(sentence)
        if m:
            holder = clean_name(m.group(2))
            b.close(holder)
            for thing in split_list(m.group(3)):
                _item(thing, holder, m.group(1).lower(), b)
    return name


def _sentences(text: str) -> list[str]:
    out = []
    rest = text.strip()
    while rest:
        head, rest = _split_top(rest, ". ")
        head = head.strip().rstrip(".").strip()
        if head:
            out.append(head)
        rest = rest.strip()
    return out


def _lines(block: str) -> list[str]:
    return [line.strip() for line in block.split("\n") if line.strip()]


def extract(observation: str, action: str | None = None, location: str | None = None) -> Extraction:
    """Triplets of one ScienceWorld observation.

    ``action`` and ``location`` (the agent's room, e.g. from the graph) resolve "The door is now
    open." after "open door to kitchen"; "look at X" output is parsed as X's description.
    """
    text = observation.replace("\r", "")
    b = Builder()
    act = action.strip().lower() if action else ""
    m = _ROOM.search(text)
    if m:
        room = clean_name(m.group(1))
        b.close(room)
        for line in _lines(m.group(2)):
            _item(line, room, "in", b)
        for line in _lines(m.group(3) or ""):
            dm = _DOOR_LINE.match(line)
            if dm:
                other = clean_name(dm.group(1))
                b.add(room, "connects to", other)
                b.add(door_name(room, other), "is", dm.group(2).lower())
    m = _INVENTORY.search(text)
    if m:
        b.close("inventory")
        for line in _lines(m.group(1)):
            _item(line, "inventory", "in", b)
    for m in _MOVE_SELF.finditer(text):
        b.add("agent", "in", m.group(1))
        b.add("agent", "visited", m.group(1))
    for m in _MOVE_THING.finditer(text):
        b.add(m.group(1), "in", m.group(2))
        b.add("agent", "moved", m.group(1))
    for m in _NOW.finditer(text):
        thing, state = clean_name(m.group(1)), m.group(2)
        value = _SWITCH.get(state, state)
        if thing == "door":
            dm = _DOOR_ACTION.match(act)
            if not (dm and location):
                continue  # which door is unknown without the room and the action
            thing = door_name(location, dm.group(1))
        b.add(thing, "is", value)
        verb = {"open": "opened", "closed": "closed", "on": "activated", "off": "deactivated"}[
            value
        ]
        b.add("agent", verb, thing)
    for m in _FOCUS.finditer(text):
        b.add("agent", "focused on", m.group(1))
    lm = _LOOK_AT.match(act)
    if lm and re.match(r"^an? ", text.strip()):
        _item(text.strip(), None, "in", b)
    return b.build()
