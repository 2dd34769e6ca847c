"""The viewer's data: planner genealogies, proposals with votes, KG diffs, agent extras, escaping,
and the 5 MB bound for a 50-step, 20-episode run. (The page itself runs in
test_viewer_browser.py.)"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from smcplan.eval.viewer import (
    lineage,
    plan_view,
    render_html,
    step_view,
    viewer_data,
    write_viewer,
)
from smcplan.eval.viewer.data import MIN_CHARS, Strings
from smcplan.eval.viewer.html import MAX_BYTES
from tests.tolerance import decimal_tol, normalized_tol


class Run:
    """The viewer's view of a run: label, path, summaries and step records (in memory)."""

    def __init__(self, episodes: dict[str, list[dict]], agent: str = "nesyfs") -> None:
        self.label, self.agent, self.path = agent, agent, Path("runs") / agent
        self._steps = episodes
        self.summaries = [
            {"episode": e, "env": "twx:coin", "goal": "find the coin", "status": "ok",
             "won": False, "score": 0.0, "steps": len(r)}
            for e, r in episodes.items()
        ]  # fmt: skip

    def steps(self, episode: str) -> list[dict]:
        return self._steps[episode]


def texts(view, S: Strings, key: str):
    return [S.items[i] for i in view[key]]


TRACE = {
    "steps": [
        {"t": 1, "actions": ["a", "b", "a"], "observations": ["x" * 400, "y", "z"],
         "ancestors": [0, 1, 2], "delta": [1, 0, 1], "log_psi": [-0.1, -2.0, "-inf"],
         "log_weights": [math.log(0.4), math.log(0.2), math.log(0.4)], "ess": 2.7778,
         "resampled": False},
        {"t": 2, "actions": ["c", "d", "c"], "observations": ["u", "v", "w"],
         "ancestors": [2, 0, 0], "delta": None, "log_psi": None,
         "log_weights": [math.log(0.5), "-inf", math.log(0.5)], "resampled": True},
    ],
    "chosen_index": 2, "action": "a", "truncated": False,
}  # fmt: skip


def test_plan_view_of_a_trace_keeps_ancestry_weights_and_bounded_texts():
    S = Strings()
    plan = {"action": "a", "action_mass": {"a": 1.0}, "num_particles": 3, "horizon": 2,
            "weighting": "nesyfs", "world_model": "simulator", "oracle": True,
            "twist": "env+novelty", "degenerate": False, "tie_break": None,
            "trace": TRACE}  # fmt: skip
    v = plan_view(plan, S.ref)
    assert v["source"] == "trace" and v["chosen"] == 2 and v["oracle"] is True
    s1, s2 = v["steps"]
    assert [S.items[i] for i in s1["a"]] == ["a", "b", "a"] and s1["a"][0] == s1["a"][2]
    assert len(S.items[s1["o"][0]]) == 160  # imagined observations cut to 160 characters
    assert s2["anc"] == [2, 0, 0] and s2["rs"] is True and s1["rs"] is False
    # weights from the log-weights when not logged; -inf is weight 0; ESS = 1 / sum W^2
    assert s1["w"] == [0.4, 0.2, 0.4] and s2["w"] == [0.5, 0.0, 0.5]
    assert s1["ess"] == 2.778 and s2["ess"] == 2.0
    assert s1["psi"] == [-0.1, -2.0, None] and s2["d"] is None
    assert lineage([s["anc"] for s in v["steps"]], 2, 1) == [0, 1]
    assert lineage([s["anc"] for s in v["steps"]], 2, 0) == [2, 0]


def test_a_summarised_trace_marks_parents_it_cut_off():
    S = Strings()
    steps = [
        {"t": 1, "actions": ["a", "b"], "log_weights": [-0.7, -0.7], "ancestors": [0, 1]},
        {"t": 2, "actions": ["c", "d"], "log_weights": [-0.7, -0.7], "ancestors": [1, 7]},
    ]  # the first 2 of 8 particles kept: particle 1's parent (7) is not in the trace
    v = plan_view({"trace": {"steps": steps, "chosen_index": 5, "truncated": True}}, S.ref)
    assert v["truncated"] and v["chosen"] is None and v["steps"][1]["anc"] == [1, -1]
    assert lineage([s["anc"] for s in v["steps"]], 2, 1) == [1]
    assert lineage([s["anc"] for s in v["steps"]], 2, 0) == [1, 0]


def test_plan_view_of_a_real_planner_result_with_arrays_only():
    """Older records: ``PlanResult.to_dict(arrays=True)`` of the real toy planner."""
    from smcplan import plan
    from smcplan.pomdp.domains import tiger

    result = plan(tiger(), key=3, num_particles=6, horizon=3)
    S = Strings()
    v = plan_view(result.to_dict(arrays=True), S.ref)
    assert v["source"] == "arrays" and len(v["steps"]) == 3
    for k, st in enumerate(v["steps"]):
        assert st["anc"] == np.asarray(result.ancestry)[k].tolist()
        assert [S.items[i] for i in st["a"]] == result.to_dict(arrays=True)["step_actions"][k]
        # the viewer keeps 3 decimals of the same float32 ESS
        assert st["ess"] == pytest.approx(float(np.asarray(result.ess)[k]), abs=decimal_tol(3))
    w = np.exp(np.asarray(result.log_weights, dtype=float))
    # the viewer renormalises log-weights kept to 3 decimals (each W_i moves by <= 2x that,
    # relative) and keeps 4 decimals of W (+ float32 rounding of the weights it compares with)
    np.testing.assert_allclose(
        v["steps"][-1]["w"],
        w / w.sum(),
        rtol=2 * decimal_tol(3),
        atol=decimal_tol(4) + normalized_tol(len(w)),
    )
    assert v["steps"][0]["w"] is None  # weights before the last step were not logged
    assert S.items[v["action"]] == result.action_name()
    # float32 masses of 6 particles, each entry kept to 4 decimals
    tol = len(v["mass"]) * decimal_tol(4) + normalized_tol(6)
    assert sum(m for _, m in v["mass"]) == pytest.approx(1.0, abs=tol)


def test_a_summary_only_plan_is_its_marginal_sorted_with_the_tail_summed():
    S = Strings()
    mass = {f"act{k}": (k + 1) / 120 for k in range(15)}  # sums to 1
    v = plan_view({"action": "act14", "action_mass": mass, "ess": [4, 2]}, S.ref)
    assert v["steps"] is None and v["ess"] == [4.0, 2.0]
    assert [S.items[a] for a, _ in v["mass"][:3]] == ["act14", "act13", "act12"]
    assert v["mass"][-1] == [None, round(sum((k + 1) / 120 for k in range(3)), 4)]
    assert plan_view("not a plan", S.ref) is None


def test_proposals_carry_rejections_votes_and_critic_scores_in_order():
    S = Strings()
    meta = {
        "proposals": [{"action": "go west", "thought": "w"}, {"action": "open door"}],
        "rejected_proposals": [{"action": "go west", "by": "reflection", "reason": "no coin",
                                "yes_fraction": 0.4}],
        "reflection_votes": [[True, True, False, False, False], [True] * 5],
        "reflection_yes_fraction": [0.4, 1.0],
    }  # fmt: skip
    v = step_view({"t": 0, "action": "open door", "meta": meta}, S)
    (a, b) = v["props"]
    assert (a["rej"], a["by"], S.items[a["why"]], a["yes"]) == (True, "reflection", "no coin", 0.4)
    assert a["votes"] == [True, True, False, False, False] and b["votes"] == [True] * 5
    assert b["rej"] is False and v["rejections"] == 1
    critic = {"proposals": [{"action": "x"}, {"action": "y"}], "critic_scores": [0.2, 0.9],
              "rejected_proposals": [{"action": "x", "by": "critic", "reason": "unsafe",
                                      "score": 0.2}],
              "r_critique": 0.9, "regenerations": 1, "rlaw_return": 0.5}  # fmt: skip
    v = step_view({"meta": critic}, S)
    assert [p["critic"] for p in v["props"]] == [0.2, 0.9] and v["rlaw"]["regenerations"] == 1


def test_step_view_tolerates_missing_and_odd_fields():
    S = Strings()
    v = step_view({}, S)
    assert v["props"] == [] and v["kg"] is None and v["plan"] is None and "more" not in v
    v = step_view({"meta": {"kg_added": [["door", "is", "open"]], "kg_removed": None,
                            "plan": {"action_mass": "odd"}, "shortlist": [5, 9]}}, S)  # fmt: skip
    assert texts(v["kg"], S, "added") == ["(door, is, open)"] and v["kg"]["removed"] == []
    assert v["plan"]["steps"] is None and v["plan"]["mass"] == []
    assert json.loads(S.items[v["more"]]) == {"shortlist": [5, 9]}


def test_page_escapes_logged_text_and_fetches_nothing():
    evil = "</script><script>alert(1)</script><!-- <img src=x onerror=alert(2)>"
    run = Run({"e": [{"t": 0, "action": evil, "feedback": evil, "meta": {"kg_added": [evil]}}]})
    page = render_html(viewer_data([run]))
    assert page.count("</script>") == 2 and page.count("<script") == 2  # the page's own two
    assert evil not in page and "<!--" not in page
    assert "<img" not in page and "<script>alert" not in page
    for remote in ("https://", 'src="http', 'href="http', "url(http", "@import", "fetch("):
        assert remote not in page


def _bound_records(n_steps: int, ep: int) -> list[dict]:
    """Schema-valid NeSyFS records with every text at (or past) the viewer's bounds, unique per
    step, a planner call (N = 4, H = 2) at every step: the worst case for the file size."""

    def u(k: str, t: int, n: int) -> str:
        return (f"{k}{ep}.{t} " * n)[:n]

    out = []
    for t in range(n_steps):
        trace = {"steps": [
            {"t": h + 1, "actions": [u(f"a{i}", t, 30) for i in range(4)],
             "observations": [u(f"o{h}{i}", t, 200) for i in range(4)],
             "ancestors": [0, 0, 1, 3], "delta": [1, 0, 0, 1], "log_psi": [-0.1] * 4,
             "log_weights": [-1.2, -1.5, -1.5, -1.2], "weights": [0.3, 0.2, 0.2, 0.3],
             "ess": 3.85, "resampled": h > 0} for h in range(2)],
            "chosen_index": 3, "action": u("a0", t, 30), "truncated": False}  # fmt: skip
        meta = {
            "proposals": [{"action": u(f"p{k}", t, 30), "thought": u("th", t, 400)}
                          for k in range(3)],
            "rejected_proposals": [{"action": u(f"p{k}", t, 30), "by": "reflection",
                                    "reason": u("r", t, 400)} for k in range(3)],
            "reflection_votes": [[True, False, False, True, False]] * 3,
            "kg_added": [u(f"f{k}", t, 40) for k in range(5)],
            "kg_removed": [u("g", t, 40)], "kg_retrieved": [f"(fact, {k}, x)" for k in range(24)],
            "plan": {"action": u("a0", t, 30), "num_particles": 4, "horizon": 2,
                     "action_mass": {u("a0", t, 30): 0.6, u("a1", t, 30): 0.4}, "trace": trace},
            "executed": "planner", "slow_thinking": True, "belief_note": u("n", t, 2000),
        }  # fmt: skip
        out.append(
            {
                "t": t,
                "action": u("a0", t, 30),
                "thought": u("T", t, 2000),
                "feedback": u("F", t, 3000),
                "observation": u("O", t, 3000),
                "meta": meta,
            }
        )
    return out


def test_a_50_step_20_episode_run_stays_under_5_mb_with_every_planner_call(tmp_path):
    run = Run({f"ep{e}": _bound_records(50, e) for e in range(20)})
    path = write_viewer([run], tmp_path / "viewer.html")
    size = path.stat().st_size
    assert size <= MAX_BYTES
    data = json.loads(path.read_text().split('id="data">', 1)[1].split("</script>", 1)[0])
    # nothing structural was dropped: 1000 steps, each with its genealogy and KG diff
    steps = [s for e in data["runs"][0]["episodes"] for s in e["trajectory"]]
    assert len(steps) == 1000 and all(len(s["plan"]["steps"]) == 2 for s in steps)
    assert all(len(s["kg"]["added"]) == 5 and len(s["props"]) == 3 for s in steps)
    # texts were cut to fit, never below MIN_CHARS
    assert (
        data["scale"] < 1 and min(len(x) for x in data["strings"] if x.startswith("F")) >= MIN_CHARS
    )
