"""The report's plots lay out labels of any length and any number of runs (issue 55).

Checked on the renderer (Agg): the title, every legend, axes title, axis label and tick label lie
inside the figure; no legend overlaps an axes; the axes keep a usable size; every legend label
is shown whole (wrapped, never cut).
"""

from __future__ import annotations

import string
from types import SimpleNamespace

import matplotlib
import matplotlib.image as mpimg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.eval import plots
from smcplan.eval.metrics import Estimate
from smcplan.eval.report import write_report
from tests.eval.test_report import PLAN, write_run

matplotlib.use("Agg", force=True)

LONG_BENCH = "scienceworld:measure-melting-point-unknown-substance"


def fake_runs(labels: list[str], benches: list[str], plans: bool = True) -> list[SimpleNamespace]:
    """Stand-ins with what the plots read: label, envs, metrics[env].success_rate, iter_steps."""
    runs = []
    for i, label in enumerate(labels):
        rate = (i % 5) / 4
        sr = Estimate(rate, max(0.0, rate - 0.2), min(1.0, rate + 0.2), 10)
        metrics = {b: SimpleNamespace(success_rate=sr) for b in benches}
        steps = [({}, {"meta": {"plan": {**PLAN, "ess": [4.0, 1.0 + i % 3]}}})] if plans else []
        runs.append(
            SimpleNamespace(label=label, envs=list(benches), metrics=metrics,
                            iter_steps=lambda steps=steps: iter(steps))
        )  # fmt: skip
    return runs


def _texts(fig):
    """(name, Text) of every piece of text the figure draws."""
    out = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle))
    for ax in fig.axes:
        out += [("axes title", ax.title), ("xlabel", ax.xaxis.label), ("ylabel", ax.yaxis.label)]
        for name, axis in (("xtick", ax.xaxis), ("ytick", ax.yaxis)):
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(1.0, hi - lo)
            out += [
                (name, tick.label1)
                for tick in axis.get_major_ticks()
                if lo - eps <= tick.get_loc() <= hi + eps
            ]  # the drawn ones
    return [(name, t) for name, t in out if t.get_visible() and t.get_text()]


def assert_laid_out(fig, labels: list[str]) -> None:
    renderer = fig.canvas.get_renderer()
    page = fig.bbox  # display pixels
    tol = 1.0

    def inside(box):
        return (box.x0 >= page.x0 - tol and box.y0 >= page.y0 - tol
                and box.x1 <= page.x1 + tol and box.y1 <= page.y1 + tol)  # fmt: skip

    for name, text in _texts(fig):
        assert inside(text.get_window_extent(renderer)), (name, text.get_text()[:60])
    assert fig.legends, "the figure has its legend"
    shown = []
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert inside(box), ("legend", box, page)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), "legend over the axes"
        for text in legend.get_texts():
            assert inside(text.get_window_extent(renderer))
            lines = text.get_text().replace(r"\$", "$").split("\n")
            assert all(len(line) <= plots._LABEL_CHARS for line in lines)
            shown.append("".join(lines))
    # every label whole: the same characters in order, wrapping drops only whitespace
    assert ["".join(s.split()) for s in shown] == ["".join(label.split()) for label in labels]
    for ax in fig.axes:
        assert ax.get_window_extent(renderer).width / fig.dpi > 1.5, "axes collapsed"
        assert ax.get_window_extent(renderer).height / fig.dpi > 1.5, "axes collapsed"
        assert ax.title.get_window_extent(renderer).width <= ax.bbox.width + tol, "title wider"
        for legend in fig.legends:
            assert not ax.title.get_window_extent(renderer).overlaps(
                legend.get_window_extent(renderer)
            )


def check_both(labels: list[str], benches: list[str]) -> None:
    """Both figures of the report on runs with these labels: laid out, every label whole."""
    runs = fake_runs(labels, benches)
    for make, shown in (
        (plots.success_rate_figure, labels),
        (plots.plan_diagnostics_figure, [f"{label} (1 calls)" for label in labels]),
    ):
        fig = make(runs)
        try:
            assert_laid_out(fig, shown)
        finally:
            matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(
    ("length", "count", "benches"),
    [
        (1, 1, ["twx:coin"]),
        (80, 2, ["twx:coin"]),
        (200, 2, ["twx:coin", LONG_BENCH]),
        (36, 12, ["twx:coin", "twx:mapreader", LONG_BENCH, "alfworld:pick_and_place"]),
        (200, 30, ["twx:coin"]),
    ],
)
def test_plots_lay_out_long_labels_and_many_series(length, count, benches):
    base = "nesyfs {learned world model} [each6-with-a-long-run-directory-name] "
    labels = [(f"{i} " + base * 4)[:length] for i in range(count)]
    check_both(labels, benches)


_LABEL = st.text(
    alphabet=string.ascii_letters + string.digits + " {}[]()-_:,.$/", min_size=1, max_size=200
).filter(lambda s: s.strip())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labels=st.lists(_LABEL, min_size=1, max_size=14, unique=True),
       n_benches=st.integers(1, 4))  # fmt: skip
def test_any_labels_fit(labels, n_benches):
    benches = ["twx:coin", LONG_BENCH, "webshop", "toy:household"][:n_benches]
    check_both(labels, benches)


def test_the_issue_report_renders_readable_pngs(tmp_path):
    """`smcplan report RUN1 RUN2` on two runs of one agent and config: the labels carry the
    (long) directory names; both PNGs come out whole."""
    ok = ("take coin", "You take the coin.", False, {})
    plan_step = ("open door", "Opened.", False, {"slow_thinking": True, "plan": PLAN})
    dirs = []
    for name in ("each6", "each6-" + "h2-n4-learned-world-model-test-seeds-20020-20059-" * 3):
        run = tmp_path / name
        write_run(run, "nesyfs", [("twx:coin", True, [plan_step, ok]),
                                  ("twx:coin", False, [plan_step])],
                  agent_config={"world_model": "learned"})  # fmt: skip
        dirs.append(run)
    result = write_report(dirs, tmp_path / "rep", viewer=False)
    labels = [run.label for run in result["runs"]]
    assert labels[0] == "nesyfs {learned world model} [each6]" and len(labels[1]) > 150
    for name in ("sr.png", "plan_diagnostics.png"):
        img = mpimg.imread(tmp_path / "rep" / name)
        assert img.ndim == 3 and img.shape[0] > 300 and img.shape[1] > 500
    fig = plots.success_rate_figure(result["runs"])
    try:
        assert_laid_out(fig, labels)
    finally:
        matplotlib.pyplot.close(fig)
