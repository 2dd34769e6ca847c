"""The trajectory viewer: one self-contained HTML file (no network) that draws what agents did.

For every episode of the given runs: a step timeline (score, action, won/lost, marks where
reflection or a critic rejected a proposal and where slow thinking ran); per step the thought,
the proposals with their reflection votes or critic scores, the knowledge-graph diff as chips,
agent-specific signals (RLAW critic scores and regenerations, RLVMR tags and process rewards);
per slow-thinking call an SVG genealogy of the planner's particles (columns = planning steps,
nodes sized and shaded by weight, edges = ancestry, ESS per step, the executed first action
highlighted; hover or click a node for its imagined action and observation).

Fixed DOM hooks (tests and users rely on them): every particle node carries
``data-particle="i"`` and ``data-step="t"`` (0-based particle, 1-based planning step); every
ancestry edge ``data-edge-step="t"``, ``data-from="j"``, ``data-to="i"``; every KG chip
``data-kg="added"`` or ``data-kg="removed"``.

Modules: :mod:`~smcplan.eval.viewer.data` (records to the embedded JSON),
:mod:`~smcplan.eval.viewer.plan` (one planner call to a genealogy),
:mod:`~smcplan.eval.viewer.html` (the page); ``assets/`` holds the HTML, CSS and JavaScript.
Must not import envs, agents or llm.
"""

from smcplan.eval.viewer.data import step_view, viewer_data
from smcplan.eval.viewer.html import render_html, write_viewer
from smcplan.eval.viewer.plan import lineage, plan_view

__all__ = ["viewer_data", "step_view", "plan_view", "lineage", "render_html", "write_viewer"]
