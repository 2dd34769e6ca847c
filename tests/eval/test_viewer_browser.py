"""The viewer in a real browser (headless Debian Chromium): the DOM after the scripts ran, for a
real NeSyFS run with one slow-thinking call (N = 4, H = 2; the record as NeSyFS wrote it), and a
screenshot of it; real RLAW, RLVMR and random runs."""

from __future__ import annotations

import os

import matplotlib.image as mpimg
import numpy as np
import pytest

from smcplan.eval.records import RunPaths, read_jsonl
from smcplan.eval.report import write_report
from tests.eval.browser import Elements, chromium, dump_dom, screenshot
from tests.eval.planner_run import H, N, planner_run

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (.ci/run installs it with apt-get)"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from smcplan.llm.testing import tiny_model

    root = planner_run(tmp_path_factory.mktemp("viewer") / "run", tiny_model())
    (steps_file,) = RunPaths(root).episodes.glob("*.steps.jsonl")
    return root, list(read_jsonl(steps_file))


@pytest.fixture(scope="module")
def page(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    write_report([run[0]], out, plots=False)
    return out / "viewer.html"


@pytest.fixture(scope="module")
def dom(page):
    return Elements(dump_dom(page))


def _plan(records):
    (rec,) = [r for r in records if r["meta"].get("plan")]
    return rec, rec["meta"]["plan"]


def test_one_planner_call_draws_n_times_h_particle_nodes(run, dom):
    _, plan = _plan(run[1])  # NeSyFS's own record of its slow-thinking call
    assert {"world_model", "oracle", "twist", "degenerate", "tie_break", "trace"} <= set(plan)
    assert plan["num_particles"] == N and plan["horizon"] == H
    nodes = dom.having("data-particle")
    assert len(nodes) == N * H == 8
    assert {(int(a["data-step"]), int(a["data-particle"])) for a in nodes} == {
        (t, i) for t in range(1, H + 1) for i in range(N)
    }
    # sized by weight: within a step, a heavier particle never gets a smaller node
    for t, step in enumerate(plan["trace"]["steps"], start=1):
        r = {int(a["data-particle"]): float(a["r"]) for a in nodes if a["data-step"] == str(t)}
        order = np.argsort(step["weights"])
        assert all(r[order[k]] <= r[order[k + 1]] + 1e-9 for k in range(N - 1))


def test_ancestry_edges_are_those_of_the_record(run, dom):
    _, plan = _plan(run[1])
    edges = dom.having("data-edge-step")
    assert len(edges) == N * (H - 1)
    ancestors = plan["trace"]["steps"][1]["ancestors"]
    assert sorted((int(e["data-from"]), int(e["data-to"])) for e in edges) == sorted(
        (ancestors[i], i) for i in range(N)
    )
    # the executed particle's lineage is highlighted: its last edge ends at the chosen particle
    chosen = [e for e in edges if "chosen" in e["class"].split()]
    assert [int(e["data-to"]) for e in chosen] == [plan["trace"]["chosen_index"]]
    assert int(chosen[0]["data-from"]) == ancestors[plan["trace"]["chosen_index"]]


def test_timeline_proposals_and_kg_chips_match_the_records(run, dom):
    records = run[1]
    cells = [a for tag, a in dom.items if tag == "button" and "tcell" in a.get("class", "")]
    assert len(cells) == len(records)
    assert ["planned" in c["class"] for c in cells] == [
        bool(r["meta"].get("plan")) for r in records
    ]
    added = sum(len(r["meta"].get("kg_added") or []) for r in records)
    removed = sum(len(r["meta"].get("kg_removed") or []) for r in records)
    assert added > 0
    assert len(dom.having("data-kg", "added")) == added
    assert len(dom.having("data-kg", "removed")) == removed
    # step 0: three proposals rejected by reflection, each with its five votes (2 of 5 Yes)
    rec, _ = _plan(records)
    assert rec["meta"]["rejections"] == 3 and rec["meta"]["executed"] == "planner"
    yes = [a for _, a in dom.items if a.get("class") == "v yes"]
    no = [a for _, a in dom.items if a.get("class") == "v no"]
    assert len(no) == 3 * 3 and len(yes) == 3 * 2 + 5 * (len(records) - 1)


def test_screenshot_of_the_slow_thinking_step(page, run, tmp_path):
    rec, _ = _plan(run[1])
    png = screenshot(page, tmp_path / "viewer.png", f"t={rec['t']}&focus=1", size=(1280, 900))
    img = mpimg.imread(png)
    assert img.shape[:2] == (900, 1280)
    # not a blank page: the drawing's particle blue (#1c6fd1) and the executed orange are there
    rgb = (img[..., :3] * 255).round().astype(int)
    assert (np.abs(rgb - [0x1C, 0x6F, 0xD1]).sum(-1) < 30).sum() > 50
    assert (np.abs(rgb - [0xE8, 0x59, 0x0C]).sum(-1) < 30).sum() > 50


@pytest.fixture(scope="module")
def agent_runs(tmp_path_factory):
    """Real RLAW and RLVMR runs (tiny model, toy:household seed 1, 3 steps) and a random one."""
    from smcplan.eval import EvalConfig, run_eval
    from smcplan.llm.testing import tiny_model

    lm, root, runs = tiny_model(), tmp_path_factory.mktemp("agents"), {}
    for agent in ("rlaw", "rlvmr", "random"):
        config = EvalConfig(
            envs=["toy:household"], agent=agent, out=str(root / agent), seeds=[1], max_steps=3
        )
        run_eval(config, load_lm=lambda *_: lm, progress=False)
        (steps,) = RunPaths(root / agent).episodes.glob("*.steps.jsonl")
        runs[agent] = (root / agent, list(read_jsonl(steps)))
    page = root / "report" / "viewer.html"
    write_report([r for r, _ in runs.values()], root / "report", plots=False)
    return runs, page


def test_rlaw_critic_scores_and_regenerations_are_drawn(agent_runs):
    runs, page = agent_runs
    dom = Elements(dump_dom(page, "run=0"))
    records = runs["rlaw"][1]
    scores = [s for r in records for s in r["meta"]["critic_scores"]]
    meters = [a for _, a in dom.items if a.get("class") == "meter"]
    # one meter per critic call, plus one for each step's R_critique
    assert len(meters) == len(scores) + len(records)
    rejected = sum(r["meta"]["rejections"] for r in records)
    assert len([a for _, a in dom.items if a.get("class") == "prop rejected"]) == rejected


def test_rlvmr_tags_and_process_rewards_are_drawn(agent_runs):
    runs, page = agent_runs
    text = dump_dom(page, "run=1")
    records = runs["rlvmr"][1]
    tags = [r["meta"]["rlvmr_tag"] for r in records]
    dom = Elements(text)
    marks = [a for _, a in dom.items if a.get("class", "").startswith("m-tag tag-")]
    assert [m["class"].split("tag-")[1] for m in marks] == tags
    body = text.split("<script", 1)[0]  # the drawn page, not the script's source
    totals = [f"process reward {r['meta']['rlvmr_reward']['total']:.2f}" for r in records]
    assert [body.count(t) > 0 for t in totals] == [True] * len(records)
    assert body.count("process reward") == len(records)


def test_a_random_agent_run_renders_without_planner_or_graph(agent_runs):
    runs, page = agent_runs
    dom = Elements(dump_dom(page, "run=2"))
    cells = [a for tag, a in dom.items if tag == "button" and "tcell" in a.get("class", "")]
    assert len(cells) == len(runs["random"][1]) > 0
    assert not dom.having("data-particle") and not dom.having("data-kg")
