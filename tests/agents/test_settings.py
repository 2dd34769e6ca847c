"""The agents' groups of settings: one typed object per group, built once, reached by three
spellings with no renaming on the way from the CLI to the planner (issue 32)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smcplan.agents import agent_options, check_settings, make
from smcplan.agents.nesyfs import NeSyFSAgent
from smcplan.agents.settings import expand_shorthands, resolve_settings
from smcplan.cli import parse_kv
from smcplan.errors import nest_dotted
from smcplan.llm.settings import ReflectionConfig
from smcplan.planning import PlannerConfig, PlanningError, Retrieval
from smcplan.planning.config import WorldModelKind, world_model_of

PACKAGE = Path(__file__).resolve().parents[2] / "smcplan"


def _sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in PACKAGE.rglob("*.py")}


def test_three_spellings_build_one_planner_config_and_the_slow_thinker_holds_it(tiny_lm):
    want = PlannerConfig(num_particles=3, horizon=1, world_model="simulator", progress="env")
    agents = [
        make("nesyfs", lm=tiny_lm, planner=want),
        make(
            "nesyfs",
            lm=tiny_lm,
            **parse_kv(
                [
                    "planner.num_particles=3",
                    "planner.horizon=1",
                    "planner.world_model=simulator",
                    "planner.progress=env",
                ]
            ),
        ),
        make(
            "nesyfs",
            lm=tiny_lm,
            num_particles=3,
            horizon=1,
            world_model="simulator",
            progress="env",
        ),
        make(
            "nesyfs",
            lm=tiny_lm,
            planner={"num_particles": 3, "horizon": 1},
            world_model="simulator",
            **{"planner.progress": "env"},
        ),
    ]
    for agent in agents:
        assert agent.planner_config == want
        # no repacking between the agent and the planner: the slow thinker holds that object
        assert agent.slow_thinker.config is agent.planner_config
        assert agent.planner_config.world_model is WorldModelKind.SIMULATOR
        assert agent.needs_simulator


def test_every_planner_field_reaches_the_planner_under_its_own_name(tiny_lm):
    """A non-default value of each field, given as ``planner.<field>``, is that field of the
    slow thinker's config (the walk from ``--agent-arg`` to ``tsmc`` has no renames)."""
    changed = {
        "num_particles": 7,
        "horizon": 3,
        "particles_per_action": 2,
        "lam": 2.5,
        "weighting": "twisted",
        "resampling": "multinomial",
        "ess_threshold": 0.5,
        "choice": "max_weight",
        "tie_break": "none",
        "world_model": "simulator",
        "progress": "env",
        "proposal": "uniform",
        "observation_tokens": 9,
        "observation_temperature": 0.5,
        "rollouts": 2,
        "rollout_steps": 4,
        "rollout_discount": 0.5,
        "rollout_policy": "untried",
    }
    assert set(changed) | {"world_model_path", "value_head"} == set(PlannerConfig.field_names())
    default = PlannerConfig()
    assert all(getattr(default, k) != v for k, v in changed.items())
    agent = make("nesyfs", lm=tiny_lm, **{f"planner.{k}": v for k, v in changed.items()})
    cfg = agent.slow_thinker.config
    assert {k: getattr(cfg, k) for k in changed} == changed
    kwargs = cfg.tsmc_kwargs()
    assert all(kwargs[k] == changed[k] for k in kwargs)  # tsmc's own keywords, same names
    groups, _, _ = resolve_settings(
        NeSyFSAgent,
        {},
        {"planner.world_model": "learned", "planner.world_model_path": "runs/wm/adapter"},
    )
    assert groups["planner"].world_model_path == "runs/wm/adapter"


def test_reflection_and_retrieval_groups_and_their_shorthands(tiny_lm):
    a = make(
        "nesyfs",
        lm=tiny_lm,
        **{"reflection.samples": 3, "reflection.threshold": 1.0, "retrieval.hops": 1},
    )
    b = make(
        "nesyfs",
        lm=tiny_lm,
        reflection_samples=3,
        reflection_threshold=1.0,
        retrieval=Retrieval(hops=1),
    )
    c = make(
        "nesyfs",
        lm=tiny_lm,
        reflection=ReflectionConfig(samples=3, threshold=1.0),
        retrieval={"hops": 1},
    )
    for agent in (a, b, c):
        assert agent.reflection_config == ReflectionConfig(samples=3, threshold=1.0)
        assert (agent.reflector.n, agent.reflector.threshold) == (3, 1.0)
        assert agent.retrieval == Retrieval(hops=1, limit=24)
    off = make("nesyfs", lm=tiny_lm, reflection=False)
    assert off.reflection_config.enabled is False and not off.use_reflection
    # without retrieval=, the planner reads the graph as the agent does
    assert make("nesyfs", lm=tiny_lm, kg_hops=1, kg_limit=5).retrieval == Retrieval(hops=1, limit=5)


#: a fragment of each settings check's message -> the one module that raises it
CHECKS = {
    "num_particles must be an integer": "planning/checks.py",
    "horizon must be an integer": "planning/checks.py",
    "unknown weighting": "planning/checks.py",
    "unknown tie_break": "planning/checks.py",
    "unknown world_model": "planning/config.py",
    "unknown proposal {self.proposal": "planning/config.py",
    "rollout_discount must be": "planning/config.py",
    "observation_temperature must be": "planning/config.py",
    "reflection samples (n) must be": "llm/settings.py",
    "reflection threshold must be": "llm/settings.py",
    "Retrieval.{name} must be": "memory/retrieval.py",
    "unknown {cls.owner}(s)": "errors.py",
    "max_rejections (K) must be": "agents/nesyfs.py",
}


def test_each_setting_is_checked_in_exactly_one_place():
    """The message of each settings check occurs in one module (grep); the CLI, the agents, the
    slow thinker and plan_text build the settings objects instead of checking them again."""
    sources = _sources()
    for fragment, home in CHECKS.items():
        assert [m for m, text in sources.items() if fragment in text] == [home], fragment
    # the NamedTuple-era spellings are gone: nothing repacks or re-validates a PlannerConfig
    for module, text in sources.items():
        assert "._replace(" not in text and "PlannerConfig._fields" not in text, module
        assert "Retrieval()).validated()" not in text, module
        assert "PlannerConfig())" not in text, module


def test_one_world_model_vocabulary():
    sources = _sources()
    compared = [
        m
        for m, text in sources.items()
        # a world model compared with a string literal instead of WorldModelKind
        if re.search(
            r"""world_model[^"'\n]{0,40}[!=]= *["'](simulator|lm|learned|exact)["']""", text
        )
    ]
    assert compared == []
    assert [str(w) for w in WorldModelKind] == ["lm", "simulator", "learned", "exact"]
    assert WorldModelKind("simulator").oracle and not WorldModelKind("learned").oracle
    for options in (
        {"world_model": "simulator"},
        {"planner.world_model": "simulator"},
        {"planner": {"world_model": "simulator"}},
        {"planner": PlannerConfig(world_model="simulator")},
    ):
        assert world_model_of(options) is WorldModelKind.SIMULATOR
    assert world_model_of({}) is None and world_model_of({"world_model": "nope"}) is None


def test_option_listings_and_errors(tiny_lm):
    names = agent_options("nesyfs", dotted=True)
    assert {
        "planner",
        "planner.num_particles",
        "reflection.samples",
        "world_model",
        "retrieval.hops",
        "slow_thinker",
    } <= set(names)
    assert set(agent_options("nesyfs")) == {n for n in names if "." not in n}
    assert "planner.num_particles" not in agent_options("react", dotted=True)
    check_settings("react", {"anything": 1})  # agents without groups accept anything here
    with pytest.raises(PlanningError, match="unknown planner option"):
        make("nesyfs", lm=tiny_lm, **{"planner.particles": 4})
    with pytest.raises(PlanningError, match="num_particles must be an integer >= 1; got 0"):
        NeSyFSAgent(tiny_lm, num_particles=0)
    with pytest.raises(ValueError, match="given twice"):
        expand_shorthands(NeSyFSAgent, {"plan_proposal": "lm", "planner.proposal": "lm"})
    with pytest.raises(ValueError, match="is not a group"):
        nest_dotted({"planner": 3, "planner.horizon": 2})
    groups, given, rest = resolve_settings(NeSyFSAgent, {}, {"seed": 3, "horizon": 1})
    assert rest == {"seed": 3} and given == {"planner"} and groups["planner"].horizon == 1


def test_settings_are_frozen_and_replace_checks_again():
    cfg = PlannerConfig()
    with pytest.raises(AttributeError):
        cfg.num_particles = 8  # type: ignore[misc]
    assert cfg.replace(num_particles=8).num_particles == 8 and cfg.num_particles == 4
    with pytest.raises(PlanningError, match="num_particles must be an integer >= 1"):
        cfg.replace(num_particles=-1)
    with pytest.raises(PlanningError, match="unknown planner option"):
        cfg.replace(particles=3)
    with pytest.raises(ValueError, match="reflection tokens"):
        ReflectionConfig(tokens=0)
