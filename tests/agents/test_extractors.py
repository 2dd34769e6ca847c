"""Triplet extraction for agents: rule / llm / auto, and malformed LLM triplets dropped."""

from __future__ import annotations

import pytest

from smcplan.agents.extractors import Extractor, clean_triplets
from smcplan.memory import Triplet

TWX = (
    "You are in the kitchen. In one part of the room you see a fridge that is closed. "
    "To the West you see the living room."
)
HOUSEHOLD = (
    "You are in the middle of a room. Looking quickly around you, you see a drawer 1, "
    "a drawer 2, a cabinet 1."
)


def test_clean_triplets_drops_fields_that_normalise_to_nothing():
    good, dropped = clean_triplets([("The", "is", "x"), ("Coin", "in", "the Box."), ("a",)])
    assert good == [Triplet("coin", "in", "box")] and dropped == 2


def test_rule_extractor_reads_the_benchmark_format_detected_at_start():
    ex = Extractor("rule")
    assert ex.start(TWX) == "rule"
    (out,) = ex([TWX], [None])
    assert Triplet("agent", "in", "kitchen") in out and Triplet("fridge", "is", "closed") in out


def test_auto_uses_rules_for_known_formats_and_the_llm_otherwise(tiny_lm):
    ex = Extractor("auto", tiny_lm)
    assert ex.start(HOUSEHOLD) == "rule"
    assert ex.start("A strange place with no known format.") == "llm"
    (out,) = ex(["A strange place."], ["look"])
    assert all(isinstance(t, Triplet) for t in out)  # schema-valid, whatever the tiny model says
    assert Extractor("auto").start("A strange place.") == "rule"  # no model: rules (may be empty)


def test_llm_extractor_needs_a_model_and_unknown_kinds_are_named():
    with pytest.raises(ValueError, match="needs lm="):
        Extractor("llm")
    with pytest.raises(ValueError, match="unknown extractor 'rules'; known: rule, llm, auto"):
        Extractor("rules")


def test_the_generic_rule_set_reads_the_graph_with_auto_and_hands_the_planner_no_game_rules():
    """``env_kind="generic"``: the knowledge graph is read with the ``auto`` grammar (the same
    triplets as ``auto``), and the planner gets :class:`NullRules` (no goal, no correction),
    the generic cell every game-specific result is reported beside."""
    from smcplan.agents.extractors import game_rules
    from smcplan.games import GENERIC, NullRules

    generic, auto = Extractor("rule", env_kind=GENERIC), Extractor("rule", env_kind="auto")
    generic.start(TWX), auto.start(TWX)
    assert generic([TWX], [None]) == auto([TWX], [None])
    rules = game_rules(generic)
    assert type(rules) is NullRules
    assert rules.parse_goal("Your task is to search the environment and find the coin.") is None
    assert rules.imagined_reply({("kitchen", "north"): "closed"}, {}, "kitchen", "move north",
                                "You are in the garden.") == "You are in the garden."  # fmt: skip


@pytest.mark.parametrize("bad", ["none", "twx-coin-typo", "", 3, ["twx"]])
def test_an_unknown_rule_set_is_refused_when_the_agent_is_made(bad, tiny_lm):
    """Not at the first episode's reset (a run of 20 episodes once failed every one of them)."""
    from smcplan import agents
    from smcplan.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"env_kind=.*unknown rule set.*generic"):
        Extractor("rule", env_kind=bad)
    with pytest.raises(InvalidArgumentError, match=r"env_kind="):
        agents.make("nesyfs", lm=tiny_lm, env_kind=bad)
