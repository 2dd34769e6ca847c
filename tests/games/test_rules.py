"""The game homes (``smcplan.games``): the protocol's contract for every benchmark family, the
one list of failure replies, and a new benchmark that runs without editing ``planning/``."""

from __future__ import annotations

import re

import pytest

from smcplan.agents.extractors import Extractor, game_rules
from smcplan.agents.rlvmr_rewards import INVALID_FEEDBACK
from smcplan.games import (
    FAILURE_REPLIES,
    FAMILIES,
    INVALID_REPLIES,
    GameRules,
    MapFacts,
    NullRules,
    TaskGoal,
    rules_for,
)
from smcplan.games.alfworld import AlfworldRules
from smcplan.games.twx import BLOCKED_REPLY, TwxRules
from smcplan.planning.places import PlaceMap, read_step
from smcplan.planning.seen import Seen
from smcplan.planning.twist_task import TaskProgress

KITCHEN = (
    "You are in the kitchen. In one part of the room you see a stove. \n"
    "To the North you see a closed patio door. To the West you see the living room. "
)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_home_keeps_the_protocol(family):
    rules = rules_for(family)
    assert isinstance(rules, GameRules)
    assert isinstance(rules.env_kind, str) and isinstance(rules.complete_map, bool)
    assert isinstance(rules.hold_penalty, float)
    assert rules.is_failure("anything", {"invalid": True}) is True
    assert isinstance(rules.is_failure("You take the coin."), bool)
    assert rules.parse_goal("no template says this") is None
    assert isinstance(rules.stays_put("look"), bool) and isinstance(rules.hides_only("x"), bool)
    assert rules.imagined_reply({}, {}, None, "look", "Some reply.") == "Some reply."
    assert rules.known_reply({}, {}, None, "move north") is None
    facts = rules.read(PlaceMap(), None, KITCHEN)
    assert isinstance(facts, MapFacts)
    assert isinstance(read_step(PlaceMap(), None, KITCHEN, rules), PlaceMap)


def test_names_resolve_to_their_family_and_reading_rule_set():
    assert rules_for("twx:coin").family == "twx" and rules_for("twx:coin").env_kind == "twx:coin"
    assert rules_for("textworld_express").family == "twx"
    assert rules_for("alfworld").complete_map and isinstance(rules_for("alfworld"), AlfworldRules)
    assert rules_for("sciworld").family == "scienceworld"
    assert rules_for(None).family == rules_for("auto").family == "twx"
    assert type(rules_for("babyai:goto")) is NullRules
    own = TwxRules("twx")
    assert rules_for(own) is own
    with pytest.raises(TypeError, match="GameRules"):
        rules_for(3)  # type: ignore[arg-type]


def test_failure_replies_are_listed_once_per_home_and_the_env_flag_decides_first():
    old = {
        "Unknown action", "No known action matches that input", "Nothing happens",
        "nothing happens", "That is already", "You can't", "I'm not sure",
    }  # fmt: skip
    assert set(FAILURE_REPLIES) == old and len(FAILURE_REPLIES) == len(old)
    assert INVALID_FEEDBACK is INVALID_REPLIES
    assert INVALID_REPLIES == (
        "Unknown action", "No known action matches that input", "Nothing happens"
    )  # fmt: skip
    twx = rules_for("twx")
    assert twx.is_failure("That is already open.") and not twx.is_failure("You take the coin.")
    assert twx.is_failure("You take the coin.", {"invalid": True})
    null = NullRules()
    assert not null.is_failure("That is already open.")  # no list: only the env's flag
    assert null.is_failure("That is already open.", {"invalid": True})
    assert Seen().after("Unknown action.", "fly", {"invalid": False}, twx).last_failed
    assert Seen().after("Fine.", "fly", {"invalid": True}, null).last_failed


def test_the_null_home_corrects_no_imagined_reply():
    m = read_step(PlaceMap(), None, KITCHEN, "twx")  # the patio door is closed
    walked = "You are in the backyard. "
    assert read_step(m, "move north", walked, "twx", imagined=True) == read_step(
        m, "move north", BLOCKED_REPLY, "twx"
    )
    assert rules_for("twx").known_reply(m.doors, m.exits, m.place, "move north") == BLOCKED_REPLY
    assert NullRules().imagined_reply(m.doors, m.exits, m.place, "move north", walked) == walked


class ShopRules(NullRules):
    """A new benchmark's home, written without touching smcplan/planning/."""

    family = "shop"
    hold_penalty = 0.5
    goal_patterns = (re.compile(r"buy the (?P<obj>[a-z ]+?)\.?$"),)

    def __init__(self) -> None:
        super().__init__("auto", ("Out of stock",), self.goal_patterns)

    def read(self, view, action, observation, triplets=None, imagined=False):
        hit = re.match(r"You are at the (\w+) aisle\.", observation)
        place = hit.group(1) if hit else view.place
        got = re.match(r"You take the (\w+)\.", observation)
        where = {got.group(1): "inventory"} if got else {}
        return MapFacts(place, frozenset(), {}, {}, where, {})


def test_a_new_benchmark_home_drives_the_map_and_the_task_twist():
    shop = ShopRules()
    assert shop.parse_goal("Buy the milk.") == TaskGoal("milk")
    assert shop.is_failure("Out of stock.")
    m = read_step(PlaceMap(), None, "You are at the dairy aisle.", shop)
    assert m.place == "dairy" and m.visited == {"dairy"}
    twist = TaskProgress("Buy the milk.", m, shop)
    taken = type("P", (), {"steps": (("take milk", "You take the milk."),)})()
    assert twist.deltas(taken) == [1.0]  # the goal object is held: stage 0 -> 1


def test_agents_get_the_home_their_extractor_resolved():
    ex = Extractor("rule", env_kind="alfworld")
    assert ex.rule_set == "alfworld" and game_rules(ex).complete_map
    auto = Extractor("rule")
    auto.start(KITCHEN)
    assert auto.rule_set == "textworld_express" and game_rules(auto).family == "twx"
    assert game_rules(None).family == "twx" and game_rules(None).env_kind == "auto"
