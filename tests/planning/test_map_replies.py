"""The world-model wrapper that keeps the reply a particle's map already fixes, once
(:mod:`smcplan.planning.map_replies`): exact kept replies and carried maps, idempotence of the
correction for every game home (hypothesis), the graph updated from the kept reply, log p and
log q kept as drawn, the twists reading the same numbers as before, and the shipped learned
world model on a real twx:coin state."""

from __future__ import annotations

import jax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.games import rules_for
from smcplan.games.twx import ALREADY_CLOSED, ALREADY_OPEN, BLOCKED_REPLY
from smcplan.llm.samples import Sample
from smcplan.memory import KnowledgeGraph
from smcplan.planning.graph_update import GraphUpdate
from smcplan.planning.map_replies import MapReplies
from smcplan.planning.places import PlaceMap, read_step
from smcplan.planning.seen import Seen
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.text_roles import LMWorldModel
from smcplan.planning.twist_rules import NoveltyProgress, ProcessProgress
from smcplan.planning.twist_task import TaskProgress
from tests.planning.test_places import COIN_TASK, KITCHEN, LIVING

STAY = "You are in the kitchen. "
BACKYARD = "You are in the backyard."


def _opened() -> Seen:
    """Living room, then the kitchen, whose closed patio door to the North was opened onto the
    backyard (real replies)."""
    seen = Seen().after(LIVING, None, {}, "twx").after(KITCHEN, "move east", {}, "twx")
    return seen.after("You open the patio door, revealing the backyard. ", "open door to north", {})


class ScriptedWorld:
    """The world-model role's contract (``model(contexts, actions, seed) -> [Sample]``) with
    the replies written out per action and known log-probabilities, so that the wrapper's
    effect on each field is checked exactly."""

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def __call__(self, contexts, actions, seed=None):
        return [
            Sample(value=self.replies[a], text=self.replies[a], logq=-1.0 - i, logp=-2.0 - i,
                   num_tokens=4, finished=True)
            for i, a in enumerate(actions)
        ]  # fmt: skip


def test_the_particle_keeps_the_map_s_reply_and_carries_its_map():
    m = _opened().layout
    replies = MapReplies(m, "twx")
    root = TextParticle(kg=None, root_observation=KITCHEN)
    kept, after = replies.keep(root, "move north", STAY)
    assert kept == BACKYARD  # a move through a known exit arrives where the map says
    assert after == read_step(m, "move north", BACKYARD, "twx", imagined=True)
    assert after.place == "backyard"
    kept, after = replies.keep(root, "open door to north", "You open the wood door. ")
    assert (kept, after.doors[("kitchen", "north")]) == (ALREADY_OPEN, "open")
    # a reply the map does not decide is kept as drawn
    assert replies.keep(root, "look around", STAY)[0] == STAY


def test_the_particle_s_own_earlier_steps_fix_its_later_replies():
    replies = MapReplies(_opened().layout, "twx")
    root = TextParticle(kg=None, root_observation=KITCHEN)
    shut = "You close the patio door to the backyard. "
    kept, m1 = replies.keep(root, "close door to north", shut)
    assert kept == shut and m1.doors[("kitchen", "north")] == "closed"
    one = root.extend("close door to north", kept, place_map=m1)
    assert one.maps == (m1,)
    # its own closed door: walking through it fails, whatever the model imagines
    kept, m2 = replies.keep(one, "move north", BACKYARD)
    assert kept == BLOCKED_REPLY and m2.place == "kitchen"
    assert replies.keep(one, "close door to north", shut)[0] == ALREADY_CLOSED
    # a particle without carried maps is read from the episode's map over its steps: the same
    by_hand = TextParticle(
        kg=None, root_observation=KITCHEN, steps=(("close door to north", shut),)
    )
    assert replies.map_of(by_hand) == m1
    assert replies.keep(by_hand, "move north", BACKYARD) == (kept, m2)


def test_an_ended_particle_keeps_its_reply_and_its_map():
    from smcplan.planning.outcome import Outcome

    replies = MapReplies(_opened().layout, "twx")
    root = TextParticle(kg=None, root_observation=KITCHEN)
    kept, m1 = replies.keep(root, "move north", STAY)
    ended = root.extend("move north", kept, outcome=Outcome(score=1.0, won=True, done=True),
                        place_map=m1)  # fmt: skip
    assert replies.keep(ended, "move south", STAY) == (STAY, m1)


PLACES = ("kitchen", "corridor", "backyard", "living room")
DIRECTIONS = ("north", "south", "east", "west")
ACTIONS = [f"{v} {d}" for v in ("move",) for d in DIRECTIONS] + [
    f"{v} door to {d}" for v in ("open", "close") for d in DIRECTIONS
] + ["look around", "inventory", "take coin"]  # fmt: skip
REPLIES = [
    STAY, BACKYARD, "You are in the corridor. To the South you see a closed wood door. ",
    BLOCKED_REPLY, ALREADY_OPEN, ALREADY_CLOSED, "You open the wood door, revealing the kitchen.",
    "You open the door, revealing the garden. ", "You close the patio door to the backyard. ",
    "You close the door to the corridor.", "You see a coin.", "", "I don't understand that.",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    family=st.sampled_from(["twx", "alfworld", "scienceworld", "webshop", "toy", "auto"]),
    place=st.sampled_from(PLACES),
    doors=st.dictionaries(
        st.tuples(st.sampled_from(PLACES), st.sampled_from(DIRECTIONS)),
        st.sampled_from(["open", "closed"]),
        max_size=6,
    ),
    exits=st.dictionaries(
        st.tuples(st.sampled_from(PLACES), st.sampled_from(DIRECTIONS)),
        st.sampled_from(PLACES),
        max_size=6,
    ),
    action=st.sampled_from(ACTIONS),
    reply=st.sampled_from(REPLIES),
)
def test_the_correction_is_idempotent_so_a_kept_reply_is_read_as_it_is(
    family, place, doors, exits, action, reply
):
    """c(M, a, c(M, a, o)) = c(M, a, o) for every home: the twists' readers, which still apply
    the correction to any particle's steps, never change a reply the wrapper kept."""
    rules = rules_for(family)
    once = rules.imagined_reply(doors, exits, place, action, reply)
    assert rules.imagined_reply(doors, exits, place, action, once) == once
    m = PlaceMap(place=place, visited=frozenset({place}), exits=exits, doors=doors)
    assert read_step(m, action, once, rules, imagined=True) == read_step(
        m, action, reply, rules, imagined=True
    )


def _world(seen: Seen, replies: dict[str, str], actions: list[str]) -> LMWorldModel:
    graphs = GraphUpdate("rule", env_kind="twx")
    return LMWorldModel(
        ScriptedWorld(replies), COIN_TASK, graphs, actions, replies=MapReplies(seen.layout, "twx")
    )


def test_the_world_model_updates_the_graph_from_the_kept_reply_and_keeps_log_p_and_log_q():
    seen = _opened()
    actions = ["move north", "open door to north", "look around"]
    drawn = {"move north": STAY, "open door to north": "You open the wood door. ",
             "look around": STAY}  # fmt: skip
    world = _world(seen, drawn, actions)
    kg = KnowledgeGraph([("agent", "in", "kitchen")])
    root = TextParticle(kg=kg, root_observation=KITCHEN, admissible=tuple(actions))
    out = world(jax.random.key(0), [root] * 3, actions, 0, 1)
    assert out.observations == [BACKYARD, ALREADY_OPEN, STAY.strip()]  # stripped as drawn
    assert [p.steps[0][1] for p in out.particles] == out.observations
    # the graph of the move is updated from the kept reply: the agent is in the backyard
    assert out.particles[0].kg.location_of("agent") == "backyard"
    assert kg.location_of("agent") == "kitchen"  # the root's graph is never touched
    assert [p.maps for p in out.particles] == [
        (read_step(seen.layout, a, o, "twx", imagined=True),)
        for a, o in zip(actions, out.observations, strict=True)
    ]
    # the drawn text's log p and log q enter the weight unchanged (module docstring)
    assert out.log_p.tolist() == [-2.0, -3.0, -4.0]
    assert out.log_q.tolist() == [-1.0, -2.0, -3.0]


@pytest.mark.parametrize("horizon", [1, 2])
def test_the_twists_read_the_wrapper_s_particles_as_they_read_the_raw_ones(horizon):
    """Each twist's per-step values on the wrapper's particles (kept replies, carried maps)
    equal its values on the same draws left raw, which the twists correct themselves (the
    correction is applied where the particle's map decides, once either way)."""
    seen = _opened()
    actions = ["move north", "close door to north", "open door to north", "look around"]
    drawn = {"move north": STAY, "close door to north": "You close the door. ",
             "open door to north": "You open the wood door. ", "look around": STAY}  # fmt: skip
    world = _world(seen, drawn, actions)
    particles = [TextParticle(kg=None, root_observation=KITCHEN)] * len(actions)
    raws = list(particles)
    for t in range(horizon):
        step = actions if t == 0 else list(reversed(actions))
        particles = world(jax.random.key(t), particles, step, t, horizon).particles
        raws = [p.extend(a, drawn[a].strip()) for p, a in zip(raws, step, strict=True)]
    for twist in (
        TaskProgress(COIN_TASK, seen.layout, "twx"),
        NoveltyProgress(seen, "twx"),
        ProcessProgress(seen, "twx"),
    ):
        assert [twist.deltas(p) for p in particles] == [twist.deltas(p) for p in raws]


def test_the_shipped_learned_world_model_keeps_the_map_s_replies_on_a_real_coin_state():
    """twx:coin dev seed 10000 starts in a kitchen with three closed doors: every imagined move
    into one of them is kept as the game's failure reply and closing one as "already closed",
    whatever the shipped model drew; each kept reply is the correction of the model's own
    greedy reply to the same context (drawn again here), and each particle's graph places the
    agent where its map does."""
    from smcplan.envs import make
    from smcplan.planning.learned import learned_observation_model
    from smcplan.planning.text_components import build_text_planner, run_text_planner

    env = make("twx:coin", split="dev")
    try:
        observation, info = env.reset(10000)
        task, admissible = env.task, list(info["admissible_actions"])
    finally:
        env.close()
    seen = Seen().after(observation, None, info, "twx:coin")
    kg = KnowledgeGraph(rules_for("twx:coin").triplets(observation, None))
    planner = build_text_planner(
        task, kg, admissible, observation=observation, seen=seen, env_kind="twx:coin"
    )
    result = run_text_planner(planner, 0)
    closed = [d for (p, d), s in seen.layout.doors.items() if p == "kitchen" and s == "closed"]
    assert sorted(closed) == ["east", "north", "south"]
    model = learned_observation_model("twx-coin-world-model", 32, temperature=0.0)
    rules = rules_for("twx:coin")
    for p in result.particles:
        (action, kept), m = p.steps[0], p.maps[0]
        raw = model([TextParticle(kg=kg, root_observation=observation).context(task)], [action])
        raw = str(raw[0].value).strip()
        assert kept == rules.imagined_reply(
            seen.layout.doors, seen.layout.exits, "kitchen", action, raw
        )
        if action in {f"move {d}" for d in closed}:
            assert kept == BLOCKED_REPLY and m.place == "kitchen"
        if action in {f"close door to {d}" for d in closed}:
            assert kept == ALREADY_CLOSED
        assert p.kg.location_of("agent") == m.place
