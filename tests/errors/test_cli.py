"""Argument lists into ``smcplan`` (``cli.main``): exit 0, or exit 2 with one line on stderr."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.cli import main
from smcplan.eval.records import RunPaths

ENVS = ["toy:tiger"] * 5 + ["toy:tigr", "", "twx:con", "nonsense", "toy:tiger,toy:tiger"]
AGENTS = ["random"] * 4 + ["rnd", "", "react"]
SEEDS = ["0", "0", "0-1", "3-1", "-1", "a", "1.5", "", ",", "0-99999999999", "1,,2", "0,", ",0"]
INTS = ["1", "2", "0", "-3", "x", "1.5", "", "99999999999999999999"]
KVS = ["seed=1", "bogus=1", "x", "=1", "seed=[1,2]", "max_steps=2", "max_steps=-1", "max_steps=1.5"]
MODELS = ["none", "smollm2-135m", ""]


@st.composite
def eval_argv(draw, out):
    argv = [
        "eval",
        "--env",
        draw(st.sampled_from(ENVS)),
        "--agent",
        draw(st.sampled_from(AGENTS)),
        "--no-progress",
        "--out",
        out,
    ]
    argv += (
        ["--seeds", draw(st.sampled_from(SEEDS))]
        if draw(st.booleans())
        else ["--split", draw(st.sampled_from(["dev", "nope"]))]
    )
    argv += ["--max-steps", draw(st.sampled_from(["2", "3"] + INTS))]
    argv += ["--episodes", draw(st.sampled_from(["1"] + INTS))]
    for flag, pool in (
        ("--agent-arg", KVS),
        ("--env-arg", KVS),
        ("--model", MODELS),
        ("--seed", INTS),
        ("--trials", INTS),
    ):
        if draw(st.integers(0, 3)) == 0:
            argv += [flag, draw(st.sampled_from(pool))]
    if draw(st.integers(0, 9)) == 0:
        argv.append(draw(st.sampled_from(["--bogus", "extra", "--max-steps"])))
    return argv


def _check(rc, capsys):
    err = capsys.readouterr().err
    assert rc in (0, 2), f"exit status {rc}; stderr: {err}"
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("smcplan") and "error: " in lines[0], err


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_eval_argument_lists(tmp_path, capsys, data):
    argv = data.draw(eval_argv(str(tmp_path / uuid.uuid4().hex)))
    _check(main(argv), capsys)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    runs=st.lists(st.sampled_from(["missing", "file", "empty"]), min_size=1, max_size=2),
    resamples=st.sampled_from(["10"] + INTS),
    seed=st.sampled_from(INTS),
)
def test_report_argument_lists(tmp_path, capsys, runs, resamples, seed):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir(exist_ok=True)
    argv = [
        "report",
        *[str(tmp_path / r) for r in runs],
        "--resamples",
        resamples,
        "--seed",
        seed,
        "--out",
        str(tmp_path / "rep"),
        "--no-plots",
        "--no-viewer",
    ]
    _check(main(argv), capsys)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--env-arg", "bogus=1"],
            "unknown option 'bogus' for env 'toy:tiger' (--env-arg); valid: ",
        ),
        (["--agent-arg", "x"], "argument --agent-arg: expected KEY=VALUE, got 'x'"),
        (
            ["--agent-arg", "bogus=1"],
            "unknown option 'bogus' for agent 'random' (--agent-arg); valid: seed",
        ),
        (
            ["--model", "smollm2-135m"],
            "agent 'random' takes no language model; drop --model smollm2-135m",
        ),
        (["--episodes", "0"], "argument --episodes: expected a positive integer, got 0"),
        (
            ["--seeds", "1,,2"],
            "argument --seeds: bad seed list '1,,2': an empty item between commas",
        ),
        (["--seeds", "0,"], "argument --seeds: bad seed list '0,': an empty item between commas"),
    ],
)
def test_usage_errors_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    rc = main(
        [
            "eval",
            "--env",
            "toy:tiger",
            "--agent",
            "random",
            "--seeds",
            "0",
            "--out",
            str(out),
            *argv,
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err
    assert not out.exists()


def test_a_bad_option_value_is_a_usage_error_not_an_error_episode(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(
        [
            "eval",
            "--env",
            "toy:tiger",
            "--agent",
            "random",
            "--seeds",
            "0",
            "--out",
            str(out),
            "--agent-arg",
            "seed=1.5",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "seed must be an integer; got 1.5" in err
    assert not RunPaths(out).summaries()  # found when the agent is built: no episode recorded


def test_out_that_is_a_file_and_report_resamples_0(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    assert (
        main(["eval", "--env", "toy:tiger", "--agent", "random", "--seeds", "0", "--out", str(f)])
        == 2
    )
    assert "is an existing file" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--resamples", "0"]) == 2
    assert "--resamples: expected a positive integer, got 0" in capsys.readouterr().err


def test_a_huge_seed_range_is_capped_by_episodes_before_it_is_expanded(tmp_path, capsys):
    import json

    out = tmp_path / "run"
    rc = main(
        [
            "eval",
            "--env",
            "toy:tiger",
            "--agent",
            "random",
            "--seeds",
            "5-99999999999999",
            "--episodes",
            "2",
            "--max-steps",
            "2",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["seeds"] == [5, 6] and len(config["episodes"]) == 2


@pytest.mark.parametrize(
    "agent", ["random", "react", "nesyfs", "reflexion", "zeroshot", "rlaw", "rlvmr"]
)
def test_an_unknown_agent_arg_lists_the_valid_keys_of_every_agent(tmp_path, capsys, agent):
    from smcplan import agents

    valid = agents.agent_options(agent)
    assert valid and "lm" not in valid
    rc = main(
        [
            "eval",
            "--env",
            "toy:tiger",
            "--agent",
            agent,
            "--seeds",
            "0",
            "--agent-arg",
            "bogus=1",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr().err
    assert (
        rc == 2
        and f"unknown option 'bogus' for agent '{agent}' (--agent-arg); valid: {', '.join(valid)}"
        in err
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rollouts=3", "progress=task", "world_model=simulator"],
         "rollouts=3 is the 'env' twist's leaf value, but progress is 'task'; add 'env'"),
        (["rollout_discount=1.5", "progress=env", "world_model=simulator"],
         "rollout_discount must be a number in (0, 1]; got 1.5"),
        (["num_particles=0"], "num_particles"),
        (["plan_proposal=magic"], "unknown proposal 'magic'; known: lm, uniform"),
        (["planner.num_particles=0"], "num_particles must be an integer >= 1; got 0"),
        (["planner.N=4"], "unknown planner option(s) 'N'; known: num_particles, horizon"),
        (["planner.world_model=oracle"], "unknown world_model 'oracle'; known: lm, simulator"),
        (["reflection.samples=0"], "reflection samples (n) must be an integer >= 1; got 0"),
        (["reflection.threshold=2"], "reflection threshold must be a number in [0, 1]"),
        (["world_model=lm", "planner.world_model=lm"], "is given twice"),
        (["planner=3"], "planner must be a smcplan.planning.config.PlannerConfig or a mapping"),
    ],
)
def test_bad_slow_thinker_settings_exit_2_before_any_model_loads_or_file_is_written(
    tmp_path, capsys, args, message
):
    out = tmp_path / "run"
    argv = ["eval", "--env", "toy:tiger", "--agent", "nesyfs", "--seeds", "0", "--out", str(out)]
    for kv in args:
        argv += ["--agent-arg", kv]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


@pytest.mark.parametrize("seeds", ["1,,2", "0,", "3-1", "-1", "a", ""])
def test_the_alfworld_generator_refuses_a_bad_seed_list_in_one_line(capsys, seeds):
    from smcplan.envs.alfworld_gen.__main__ import main as generate

    with pytest.raises(SystemExit) as stop:
        generate(["--seeds", seeds, "--tasks", "pick_and_place"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1
    assert f"argument --seeds: bad seed list {seeds!r}" in err


def test_the_alfworld_generator_names_the_known_task_types(capsys):
    from smcplan.envs.alfworld_gen.__main__ import main as generate

    with pytest.raises(SystemExit) as stop:
        generate(["--tasks", "pick_and_place,,bogus", "--seeds", "0"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "unknown task type(s) '', 'bogus'; known: pick_and_place," in err
