"""The benchmarks' action grammars: the command verbs each parser understands.

A free-form agent (``action_mode="free"``) writes its command as text and the environment parses
it; the only constraint put on the text is that it starts with one of these verbs (then free
lower-case arguments: :mod:`smcplan.llm.roles.free_action`). Nothing here depends on the
state, so a command can name an object that does not exist, and the environment rejects it
(``info["invalid"]``), which is what RLAW's hallucination rate counts.

The verbs are the leading words of every command the backend can admit, collected from its
admissible lists (TextWorldExpress: train seeds 0-29 and dev/test seeds 10000-10001,
20000-20001 of each game, with up to 30 random admissible steps each, plus cookingworld's
"prepare meal"; ALFWorld: the command list of its ``alfred.twl2`` grammar's ``help``, checked on
generated games of all six task types; ScienceWorld: the simulator's action templates).
``tests/envs/test_grammar.py`` checks that every admissible action of sampled episodes starts
with a verb of its benchmark. Adapters put them in every ``info`` as ``"action_verbs"``.

Pure data; imports nothing.
"""

from __future__ import annotations

__all__ = ["TWX_VERBS", "ALFWORLD_VERBS", "SCIENCEWORLD_VERBS", "action_verbs"]

#: TextWorldExpress game -> its command verbs.
TWX_VERBS: dict[str, tuple[str, ...]] = {
    "cookingworld": (
        "look around", "inventory", "examine", "move", "open", "close", "take", "put", "read",
        "eat", "cook", "slice", "chop", "dice", "prepare meal",
    ),
    "twc": ("look around", "inventory", "move", "open", "close", "take", "put"),
    "coin": ("look around", "inventory", "move", "open", "close", "take"),
    "arithmetic": ("look around", "inventory", "take", "put", "read"),
    "mapreader": ("look around", "inventory", "task", "move", "take", "put", "read"),
    "sorting": ("look around", "inventory", "take", "put"),
    "simonsays": (
        "take", "eat", "examine", "hop", "jump", "meow", "sit", "slice", "smell", "touch", "turn",
    ),
    "peckingorder": ("look around", "inventory", "take", "put", "read"),
}

#: ALFWorld's commands (the ``help`` text of ``alfred.twl2``).
ALFWORLD_VERBS: tuple[str, ...] = (
    "go to", "take", "move", "open", "close", "examine", "use", "heat", "cool", "clean",
    "slice", "look", "inventory", "help",
)

#: ScienceWorld's action templates (the simulator's ``getPossibleActions``), verbs only
#: ("go OBJ" and "teleport OBJ" are admitted as "go to X" and "teleport to X").
SCIENCEWORLD_VERBS: tuple[str, ...] = (
    "open", "close", "activate", "deactivate", "connect", "disconnect", "use", "look around",
    "look at", "look in", "read", "move", "pick up", "put down", "pour", "dunk", "mix", "go to",
    "teleport to", "eat", "flush", "focus on", "wait", "wait1", "task", "inventory",
    "reset task",
)


def action_verbs(env_name: str) -> tuple[str, ...] | None:
    """The command verbs of ``env_name`` (``twx:coin``, ``alfworld:<type>``,
    ``scienceworld:<task>``); ``None`` for a benchmark without a fixed verb grammar."""
    family, _, rest = env_name.partition(":")
    if family == "twx":
        return TWX_VERBS.get(rest)
    if family == "alfworld":
        return ALFWORLD_VERBS
    if family == "scienceworld":
        return SCIENCEWORLD_VERBS
    return None
