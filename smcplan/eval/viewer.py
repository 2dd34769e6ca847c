"""A self-contained HTML trajectory viewer (one file, no network): step, thought, action, feedback,
knowledge-graph changes and the planner's particles, for every episode of the given runs.

The data is embedded as JSON in a ``<script type="application/json">`` block and rendered by a few
lines of plain JavaScript using ``textContent`` (no HTML injection from logged text). Long texts
are clipped to keep the file small. Must not import envs, agents or llm.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.eval.records import Run, to_jsonable

__all__ = ["viewer_data", "write_viewer"]

_CLIP = 3000


def _clip(text: Any, limit: int = _CLIP) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[:limit] + f" … [{len(s) - limit} more chars]"


def _plan_summary(plan: Any) -> dict[str, Any] | None:
    if not isinstance(plan, dict):
        return None
    keep = ("action", "weighting", "num_particles", "horizon", "log_Z", "ess", "action_mass")
    out = {k: plan[k] for k in keep if k in plan}
    if isinstance(out.get("action_mass"), dict):
        top = sorted(out["action_mass"].items(), key=lambda kv: -float(kv[1]))[:8]
        out["action_mass"] = dict(top)
    if "first_actions" in plan:
        out["particles_first_actions"] = list(plan["first_actions"])[:64]
    return out


def viewer_data(runs: Sequence[Run], *, max_episodes: int = 200) -> list[dict[str, Any]]:
    """The JSON the viewer embeds: per run its label and up to ``max_episodes`` episodes."""
    data = []
    for run in runs:
        episodes = []
        for s in run.summaries[:max_episodes]:
            steps = []
            records = run.steps(s["episode"])
            for st in records:
                meta = dict(st.get("meta") or {})
                kg = {k: meta.pop(k) for k in list(meta) if k.lower().startswith("kg")}
                plan = meta.pop("plan", None)
                steps.append(
                    {
                        "trial": st.get("trial", 0),
                        "t": st.get("t"),
                        "tag": st.get("tag"),
                        "thought": _clip(st.get("thought")),
                        "action": _clip(st.get("action"), 500),
                        "feedback": _clip(st.get("feedback")),
                        "invalid": bool(st.get("invalid")),
                        "score": st.get("score"),
                        "kg": kg or None,
                        "plan": _plan_summary(plan),
                        "meta": _clip(json.dumps(to_jsonable(meta), ensure_ascii=False), 4000),
                    }
                )
            first_obs = _clip(records[0].get("observation")) if records else ""
            episodes.append(
                {
                    "id": s["episode"],
                    "env": s["env"],
                    "goal": _clip(s.get("goal")),
                    "status": s.get("status"),
                    "won": s.get("won"),
                    "score": s.get("score"),
                    "steps": s.get("steps"),
                    "error": (s.get("error") or {}).get("message"),
                    "first_observation": first_obs,
                    "trajectory": steps,
                }
            )
        data.append({"label": run.label, "path": str(run.path), "episodes": episodes})
    return data


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>smcplan trajectories</title>
<style>
body{font:14px system-ui,sans-serif;margin:1em;color:#222}
select{margin-right:1em;font-size:14px}
table{border-collapse:collapse;width:100%;margin-top:1em}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}
tr.invalid td{background:#fff1f1}
pre{white-space:pre-wrap;margin:0;font:12px ui-monospace,monospace}
.won{color:#080;font-weight:bold}.lost{color:#a00}.error{color:#a60}
.small{font-size:12px;color:#555}
</style></head><body>
<h2>smcplan trajectory viewer</h2>
<div><label>Run <select id="run"></select></label>
<label>Episode <select id="ep"></select></label></div>
<div id="head"></div>
<table><thead><tr><th>trial/t</th><th>thought</th><th>action</th><th>feedback</th>
<th>KG changes</th><th>particles / plan</th><th>meta</th></tr></thead><tbody id="rows"></tbody></table>
<script type="application/json" id="data">__DATA__</script>
<script>
const DATA = JSON.parse(document.getElementById('data').textContent);
const runSel = document.getElementById('run'), epSel = document.getElementById('ep');
function el(tag, text, cls){const e=document.createElement(tag); if(text!==undefined&&text!==null) e.textContent=text; if(cls) e.className=cls; return e;}
function pre(obj){const p=el('pre'); p.textContent = (typeof obj==='string')? obj : JSON.stringify(obj,null,1); return p;}
DATA.forEach((r,i)=>runSel.appendChild(new Option(r.label+' — '+r.path, i)));
function fillEpisodes(){
  epSel.innerHTML=''; const r=DATA[runSel.value];
  r.episodes.forEach((e,i)=>{const s = e.status==='error' ? 'ERROR' : (e.won?'won':'lost');
    epSel.appendChild(new Option(e.id+' ['+s+', '+e.steps+' steps]', i));});
  render();
}
function render(){
  const r=DATA[runSel.value]; const e=r.episodes[epSel.value]; const head=document.getElementById('head');
  const rows=document.getElementById('rows'); head.innerHTML=''; rows.innerHTML='';
  if(!e) return;
  const st = e.status==='error' ? ['error: '+e.error,'error'] : (e.won?['won','won']:['lost','lost']);
  head.appendChild(el('p', e.env+' — '+e.goal));
  const p=el('p'); p.appendChild(el('span', st[0], st[1])); p.appendChild(el('span', '  score '+e.score+', '+e.steps+' steps','small')); head.appendChild(p);
  const d=el('details'); d.appendChild(el('summary','first observation')); d.appendChild(pre(e.first_observation)); head.appendChild(d);
  e.trajectory.forEach(s=>{
    const tr=el('tr'); if(s.invalid) tr.className='invalid';
    tr.appendChild(el('td', s.trial+'/'+s.t+(s.tag?' <'+s.tag+'>':'')));
    const th=el('td'); th.appendChild(pre(s.thought)); tr.appendChild(th);
    tr.appendChild(el('td', s.action+(s.invalid?'  [invalid]':'')));
    const fb=el('td'); fb.appendChild(pre(s.feedback)); fb.appendChild(el('div','score '+s.score,'small')); tr.appendChild(fb);
    const kg=el('td'); if(s.kg) kg.appendChild(pre(s.kg)); tr.appendChild(kg);
    const pl=el('td'); if(s.plan) pl.appendChild(pre(s.plan)); tr.appendChild(pl);
    const mt=el('td'); const md=el('details'); md.appendChild(el('summary','meta')); md.appendChild(pre(s.meta)); mt.appendChild(md); tr.appendChild(mt);
    rows.appendChild(tr);
  });
}
runSel.onchange=fillEpisodes; epSel.onchange=render; if(DATA.length) fillEpisodes();
</script></body></html>
"""


def write_viewer(runs: Sequence[Run], path: str | Path, *, max_episodes: int = 200) -> Path:
    """Write the viewer HTML for ``runs`` to ``path`` and return the path."""
    blob = json.dumps(viewer_data(runs, max_episodes=max_episodes), ensure_ascii=False)
    blob = blob.replace("</", "<\\/")  # never close the <script> element from inside the data
    path = Path(path)
    path.write_text(_HTML.replace("__DATA__", blob), encoding="utf-8")
    return path
