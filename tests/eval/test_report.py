"""``smcplan report`` on two hand-made runs renders the table, the plots and the viewer."""

from __future__ import annotations

import matplotlib.image as mpimg
import pytest

from smcplan.cli import main
from smcplan.eval.metrics import episode_stats
from smcplan.eval.plots import plan_diagnostics
from smcplan.eval.records import CONFIG_SCHEMA, JsonlWriter, RunPaths, atomic_write_json
from smcplan.eval.report import load_run, write_report

PLAN = {
    "action": "open door",
    "num_particles": 4,
    "ess": [4.0, 2.0],
    "action_mass": {"open door": 0.75, "go east": 0.25},
}


def write_run(root, agent, episodes, model=None, agent_config=None):
    """A run directory in the harness's format; ``episodes``: (env, won, [(action, feedback,
    invalid, meta)])."""
    paths = RunPaths(root)
    identity = {
        "agent": agent,
        "model": model,
        "quantization": None,
        "seed": 0,
        "max_steps": 20,
        "trials": 1,
        "agent_config": agent_config or {},
    }
    atomic_write_json(paths.config, {"schema": CONFIG_SCHEMA, "identity": identity, "config": {}})
    for i, (env, won, steps) in enumerate(episodes):
        eid = f"{env.replace(':', '_')}-s{i}"
        records = [
            {
                "episode": eid,
                "trial": 0,
                "t": t,
                "observation": "obs",
                "action": a,
                "thought": f"think {t}",
                "tag": None,
                "feedback": fb,
                "invalid": inv,
                "meta": meta,
                "score": 1.0 if won and t == len(steps) - 1 else 0.0,
                "agent_s": 0.1,
                "env_s": 0.1,
            }
            for t, (a, fb, inv, meta) in enumerate(steps)
        ]
        w = JsonlWriter(paths.steps(eid))
        for r in records:
            w.write(r)
        w.commit()
        stats = episode_stats(records, env=env, won=won, score=1.0 if won else 0.0)
        atomic_write_json(
            paths.summary(eid),
            {
                "episode": eid,
                "index": i,
                "env": env,
                "goal": "get the coin",
                "status": "ok",
                "won": won,
                "score": stats.score,
                "steps": stats.steps,
                "error": None,
                "stats": stats.to_dict(),
            },
        )


@pytest.fixture
def two_runs(tmp_path):
    ok = ("take coin", "You take the coin.", False, {})
    bad = ("eat door", "I don't understand </script><b>that</b>.", True, {})
    plan_step = (
        "open door",
        "Opened.",
        False,
        {"slow_thinking": True, "plan": PLAN, "kg_added": [["door", "is", "open"]]},
    )
    a, b = tmp_path / "A", tmp_path / "B"
    write_run(
        a,
        "random",
        [
            ("twx:coin", True, [ok]),
            ("twx:coin", True, [bad, ok]),
            ("twx:coin", False, [bad, bad, bad]),
        ],
    )
    write_run(
        b,
        "nesyfs",
        [
            ("twx:coin", True, [plan_step, ok]),
            ("twx:coin", True, [ok]),
            ("scienceworld:boil", False, [plan_step, bad]),
        ],
        model="smollm2-135m",
    )
    return a, b


def test_markdown_table_has_hand_computed_cells(two_runs, tmp_path):
    result = write_report(list(two_runs), tmp_path / "rep", viewer=False)
    md = result["markdown"]
    header = next(line for line in md.splitlines() if line.startswith("| Agent | twx:coin SR %"))
    assert header == (
        "| Agent | twx:coin SR % | twx:coin AvgS | twx:coin HR % | scienceworld:boil SR % "
        "| scienceworld:boil AvgS | scienceworld:boil HR % |"
    )
    main_section = md.split("## SR / AvgS / HR per agent and benchmark")[1].split("\n## ")[0]
    rows = {
        line.split(" | ")[0]: line for line in main_section.splitlines() if line.startswith("| ")
    }
    # random on coin: SR 2/3, Wilson(2,3) = [0.2077, 0.9385]; AvgS over wins (1 + 2)/2 = 1.5 with
    # bootstrap over {1, 2} in [1, 2]; HR = 2 of 3 episodes had an invalid action.
    assert "| 66.7 [20.8, 93.9] | 1.5 [1.0, 2.0] | 66.7 [20.8, 93.9] |" in rows["| random"]
    # nesyfs on coin: SR 2/2, Wilson(2,2) = [0.3424, 1]; AvgS (2 + 1)/2; HR 0/2 = [0, 0.6576]
    assert "| 100.0 [34.2, 100.0] | 1.5 [1.0, 2.0] | 0.0 [0.0, 65.8] |" in rows["| nesyfs"]
    # random never ran scienceworld: empty cells
    assert rows["| random"].endswith("|  |  |  |")
    assert "## scienceworld:boil" in md and "slow thinking/ep" in md


def test_report_writes_valid_pngs_and_plan_diagnostics(two_runs, tmp_path):
    out = tmp_path / "rep"
    write_report(list(two_runs), out)
    for name in ("sr.png", "plan_diagnostics.png"):
        img = mpimg.imread(out / name)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert "![sr](sr.png)" in (out / "report.md").read_text()


def test_no_plan_diagnostics_plot_without_slow_thinking(two_runs, tmp_path):
    out = tmp_path / "rep"
    write_report([two_runs[0]], out, viewer=False)
    assert (out / "sr.png").exists() and not (out / "plan_diagnostics.png").exists()


def test_plan_diagnostics_of_a_plan_summary():
    d = plan_diagnostics(PLAN)
    assert d == {"ess_frac": [1.0, 0.5], "chosen_mass": 0.75, "N": 4}
    # only final log-weights: ESS/N of W = (.5, .25, .25, 0) is (1/.375)/4 = 0.6667, max weight .5
    d = plan_diagnostics({"log_weights": [-0.6931472, -1.3862944, -1.3862944, "-inf"]})
    assert d["ess_frac"] == [pytest.approx(2 / 3)] and d["chosen_mass"] == pytest.approx(0.5)
    assert plan_diagnostics({"calls": {}}) is None


def test_viewer_is_self_contained_and_escapes_logged_text(two_runs, tmp_path):
    out = tmp_path / "rep"
    write_report(list(two_runs), out, plots=False)
    html = (out / "viewer.html").read_text()
    assert html.count("</script>") == 2  # only the two real closing tags
    assert "http://" not in html and "https://" not in html
    # the plan step's KG fact (logged as a list) and its first-action marginal are embedded
    assert "open door" in html and '"(door, is, open)"' in html and '"mass":[[' in html


def test_labels_disambiguate_runs_of_the_same_agent(two_runs, tmp_path):
    a, _ = two_runs
    c = tmp_path / "C"
    write_run(c, "random", [("twx:coin", False, [("look", "room", False, {})])])
    md = write_report([a, c], tmp_path / "rep", plots=False, viewer=False)["markdown"]
    assert "| random [A] |" in md and "| random [C] |" in md


def test_labels_say_free_actions_and_a_guided_rlvmr(tmp_path):
    look = [("twx:coin", False, [("look", "room", False, {})])]
    runs = {
        "P": ("rlvmr", {}),
        "F": ("rlvmr", {"action_mode": "free"}),
        "G": ("rlvmr", {"guidance": float("inf")}),
        "H": ("rlvmr+guide", {}),
        "R": ("react", {"action_mode": "free", "guidance": 1}),
    }
    for name, (agent, cfg) in runs.items():
        write_run(tmp_path / name, agent, look, agent_config=cfg)
    md = write_report([tmp_path / n for n in runs], tmp_path / "rep", plots=False,
                      viewer=False)["markdown"]
    for label in ("rlvmr", "rlvmr {free}", "rlvmr {guided}", "rlvmr+guide", "react {free}"):
        assert f"| {label} |" in md
    assert "repeat (a,o)/step %" in md and "repetitive/step %" in md


def test_cli_report_on_two_runs(two_runs, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["report", str(two_runs[0]), str(two_runs[1]), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| nesyfs (smollm2-135m) |" in printed or "| nesyfs |" in printed
    assert {p.name for p in out.iterdir()} == {
        "report.md",
        "sr.png",
        "plan_diagnostics.png",
        "viewer.html",
    }


def test_report_on_a_folder_that_is_not_a_run_says_so(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_load_run_counts_metrics_per_benchmark(two_runs):
    run = load_run(two_runs[1])
    assert set(run.metrics) == {"twx:coin", "scienceworld:boil"}
    assert run.metrics["scienceworld:boil"].slow_thinking_per_episode.value == 1.0
    assert run.overall.n == 3
