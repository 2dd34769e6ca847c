// One slow-thinking call as an SVG genealogy (see smcplan/eval/viewer/plan.py for the data):
// columns = planning steps t = 1..H, one node per particle (area ∝ weight / the step's largest
// weight, shade ∝ weight), edges = ancestry A_t (parent in step t-1 → child in step t), the
// real state "now" at the root, ESS and resampling per step above each column, the executed
// first action and the chosen particle's lineage highlighted. Hover a node: its lineage and
// details; click: pin them. DOM hooks: nodes data-particle / data-step, edges data-edge-step /
// data-from / data-to.
'use strict';
window.smcplanGenealogy = function (plan, step, h) {
  const { el, sv, str, fmt, cut, chip } = h;
  const steps = plan.steps || [];
  const H = steps.length, N = H ? steps[0].a.length : (plan.N || 0);
  const box = el('section', { class: 'plan' });
  const exec = str(plan.action);
  box.appendChild(el('h4', { text: `Slow thinking: ${plan.N ?? N} particles × ${plan.H ?? H} steps → "${exec}"` }));
  const meta = el('div', { class: 'chips' });
  const add = (label, v) => { if (v !== null && v !== undefined) meta.appendChild(chip(label + ' ' + v, 'cfg')); };
  add('weighting', plan.weighting);
  add('λ', plan.lam);
  if (plan.world_model) meta.appendChild(chip('world model ' + plan.world_model + (plan.oracle ? ' (oracle)' : ''), plan.oracle ? 'cfg oracle' : 'cfg'));
  add('twist', plan.twist);
  add('choice', plan.choice);
  add('decided by', plan.decided_by);
  add('log Ẑ', plan.log_Z === null ? null : fmt(plan.log_Z, 3));
  box.appendChild(meta);
  const notes = [];
  if (plan.degenerate) notes.push('degenerate: all particles ended with the same weight' + (plan.tie_break ? `; tie broken by ${plan.tie_break}` : ''));
  else if (plan.tie_break) notes.push('tie broken by ' + plan.tie_break);
  if (plan.truncated) notes.push('trace summarised (more than 64 particles or 8 steps)');
  if (plan.source === 'arrays') notes.push('older record: imagined observations and weights before the last step were not recorded');
  if (!H) notes.push('no per-particle trace in this record: the first-action marginal only');
  notes.forEach((n) => box.appendChild(el('p', { class: 'warn', text: n })));

  const bodyRow = el('div', { class: 'plan-body' });
  const side = el('div', { class: 'plan-side' });
  const info = el('div', { class: 'pinfo' });

  // ---------------------------------------------------------------- weights, lineages
  const W = steps.map((s) => s.w || s.a.map(() => 1 / N));
  const parentOf = (t, i) => steps[t - 1].anc[i]; // t is 1-based, t >= 2
  // oldest first, ending at (t, i); starts later when a parent was cut off the trace (-1)
  function lineageOf(t, i) { const p = [i]; for (let u = t; u > 1 && parentOf(u, p[0]) >= 0; u--) p.unshift(parentOf(u, p[0])); return p; }
  const stepOf = (line, t) => t - line.length + 1; // the 1-based step of line[0]
  const chosenLine = H && plan.chosen !== null ? lineageOf(H, plan.chosen) : null;

  function describe(t, i) {
    const s = steps[t - 1];
    const line = lineageOf(t, i);
    const rows = [el('div', { class: 'ptitle', text: `step ${t}, particle ${i}` + (t > 1 ? ` (parent ${s.anc[i]})` : '') })];
    const w = s.w ? s.w[i] : null;
    rows.push(el('div', { text: `weight W = ${fmt(w, 3)}` + (s.lw && s.lw[i] !== null ? `  (log W = ${fmt(s.lw[i], 3)})` : (s.lw ? '  (log W = −∞)' : '')) }));
    const dp = [];
    if (s.d) dp.push('δ = ' + fmt(s.d[i], 2));
    if (s.psi) dp.push('log ψ = ' + (s.psi[i] === null ? '−∞' : fmt(s.psi[i], 3)));
    if (dp.length) rows.push(el('div', { text: dp.join(' · ') }));
    const ol = el('ol', { class: 'imagined' });
    const t0 = stepOf(line, t);
    line.forEach((j, k) => {
      const u = t0 - 1 + k, st = steps[u];
      ol.appendChild(el('li', { class: u === t - 1 ? 'cur' : '', value: u + 1 }, el('b', { text: str(st.a[j]) }),
        st.o ? el('span', { text: ' → ' + str(st.o[j]) }) : null));
    });
    rows.push(el('div', { class: 'muted', text: 'imagined from now:' }), ol);
    return rows;
  }
  function showDefault() {
    info.innerHTML = '';
    const m = (plan.mass || []).find((x) => x[0] !== null && str(x[0]) === exec);
    info.appendChild(el('div', { class: 'ptitle', text: `Executed "${exec}"` }));
    const mass = `"${exec}" carries ${fmt(m ? m[1] : null)} of the final weight`;
    const why = plan.tie_break
      ? `the final weights did not decide; tie broken by ${plan.tie_break}` + (plan.chosen !== null ? ` (particle ${plan.chosen})` : '') + `; ${mass}`
      : plan.chosen !== null
        ? `first action of particle ${plan.chosen}, drawn ∝ final weight; ${mass}`
        : `largest total final weight: ${mass}`;
    info.appendChild(el('div', { text: why }));
    if (chosenLine) describe(H, plan.chosen).slice(1).forEach((r) => info.appendChild(r));
    else if (plan.imagined && plan.imagined.length) {
      const ol = el('ol', { class: 'imagined' });
      plan.imagined.forEach(([a, o]) => ol.appendChild(el('li', {}, el('b', { text: str(a) }), el('span', { text: ' → ' + str(o) }))));
      info.appendChild(ol);
    }
    info.appendChild(el('div', { class: 'muted hint', text: H ? 'hover a particle for its imagined future; click to pin' : '' }));
  }

  // ---------------------------------------------------------------- the drawing
  if (H && N) {
    const labels = N <= 16;
    const colW = labels ? 190 : 78, rowH = N <= 6 ? 40 : N <= 12 ? 28 : N <= 24 ? 18 : N <= 40 ? 12 : 8;
    const rmax = Math.min(rowH * 0.42, 13), top = 46, x0 = 26, left = 78;
    const width = left + (H - 1) * colW + (labels ? 180 : 30), height = top + N * rowH + 8;
    const X = (t) => left + (t - 1) * colW, Y = (i) => top + rowH / 2 + i * rowH;
    const svg = sv('svg', { class: 'genealogy', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'particle genealogy' });
    const gEdges = sv('g', { class: 'edges' }), gNodes = sv('g', { class: 'nodes' });
    const rootY = top + (N * rowH) / 2;
    svg.appendChild(sv('rect', { class: 'root', x: x0 - 7, y: rootY - 7, width: 14, height: 14, rx: 3 }));
    svg.appendChild(sv('text', { class: 'collabel', x: x0, y: top - 26, 'text-anchor': 'middle' }, 'now'));
    const nodes = {}, edges = {};
    // straight under the parent's label (labels have a halo), then a curve to the child
    const curve = (x1, y1, x2, y2, straight) => { const xs = x1 + (straight || 0), xm = (xs + x2) / 2; return `M${x1},${y1} H${xs} C${xm},${y1} ${xm},${y2} ${x2},${y2}`; };
    steps.forEach((s, k) => {
      const t = k + 1, x = X(t), w = W[k], wmax = Math.max(...w, 1e-12);
      const head = sv('text', { class: 'collabel', x, y: top - 30, 'text-anchor': labels ? 'start' : 'middle' }, `t = ${s.t}` + (s.rs && t > 1 ? '  ↻' : ''));
      if (s.rs && t > 1) head.appendChild(sv('title', {}, 'resampled before this step'));
      svg.appendChild(head);
      if (s.ess !== null) {
        const bw = labels ? 80 : 48, bx = labels ? x : x - bw / 2;
        svg.appendChild(sv('rect', { class: 'essbg', x: bx, y: top - 22, width: bw, height: 5, rx: 2 }));
        svg.appendChild(sv('rect', { class: 'ess', x: bx, y: top - 22, width: bw * Math.min(1, s.ess / N), height: 5, rx: 2 }));
        svg.appendChild(sv('text', { class: 'esslabel', x: labels ? bx + bw + 5 : x, y: labels ? top - 16 : top - 8, 'text-anchor': labels ? 'start' : 'middle' }, labels ? `ESS ${fmt(s.ess, 1)}/${N}` : `ESS ${fmt(s.ess, 1)}`));
      }
      for (let i = 0; i < N; i++) {
        const y = Y(i);
        let e;
        if (t === 1) e = sv('path', { class: 'rootedge', d: curve(x0 + 7, rootY, x - rmax, y) });
        else if (s.anc[i] < 0) e = sv('path', { class: 'edge cut', d: `M${x - colW / 3},${y} H${x - rmax}` }); // parent cut off
        else e = sv('path', { class: 'edge', d: curve(X(t - 1), Y(s.anc[i]), x, y, labels ? colW - 56 : 0), 'data-edge-step': t, 'data-from': s.anc[i], 'data-to': i });
        gEdges.appendChild(e);
        edges[t + ':' + i] = e;
        const frac = w[i] / wmax;
        const r = w[i] > 0 ? 2.5 + (rmax - 2.5) * Math.sqrt(frac) : 2.5;
        const c = sv('circle', { class: 'node' + (w[i] > 0 ? '' : ' dead'), cx: x, cy: y, r: r.toFixed(2), 'data-particle': i, 'data-step': t, tabindex: 0 });
        c.style.fillOpacity = w[i] > 0 ? (0.25 + 0.75 * frac).toFixed(3) : 0;
        c.appendChild(sv('title', {}, `t=${t} particle ${i}: ${str(s.a[i])} (W=${fmt(w[i], 3)})` + (s.o ? '\n→ ' + str(s.o[i]) : '')));
        if (t === 1 && str(s.a[i]) === exec) c.classList.add('exec');
        nodes[t + ':' + i] = c;
        gNodes.appendChild(c);
        if (labels) gNodes.appendChild(sv('text', { class: 'nlabel' + (t === 1 && str(s.a[i]) === exec ? ' exec' : ''), x: x + rmax + 4, y: y + 4 }, cut(str(s.a[i]), 24)));
      }
    });
    svg.appendChild(gEdges);
    svg.appendChild(gNodes);
    const paint = (line, t, cls, on) => { const t0 = stepOf(line, t); line.forEach((j, k) => { nodes[(t0 + k) + ':' + j].classList.toggle(cls, on); edges[(t0 + k) + ':' + j].classList.toggle(cls, on); }); };
    if (chosenLine) paint(chosenLine, H, 'chosen', true);
    let pinned = null;
    const mark = (t, i, on) => paint(lineageOf(t, i), t, 'hl', on);
    const show = (t, i) => { info.innerHTML = ''; describe(t, i).forEach((r) => info.appendChild(r)); };
    Object.values(nodes).forEach((c) => {
      const t = +c.getAttribute('data-step'), i = +c.getAttribute('data-particle');
      c.addEventListener('mouseenter', () => { if (!pinned) { mark(t, i, true); show(t, i); } });
      c.addEventListener('mouseleave', () => { if (!pinned) { mark(t, i, false); showDefault(); } });
      c.addEventListener('click', () => {
        if (pinned) mark(pinned[0], pinned[1], false);
        pinned = pinned && pinned[0] === t && pinned[1] === i ? null : [t, i];
        if (pinned) { mark(t, i, true); show(t, i); } else showDefault();
      });
    });
    bodyRow.appendChild(el('div', { class: 'gwrap' }, svg));
  }

  // ---------------------------------------------------------------- first-action marginal
  if (plan.mass && plan.mass.length) {
    const mass = el('div', { class: 'mass' }, el('div', { class: 'muted', text: 'first-action weight Σᵢ Wᵢ [a¹ᵢ = a]' }));
    plan.mass.forEach(([a, m]) => {
      const name = a === null ? '(other)' : str(a);
      const bar = el('i');
      bar.style.width = Math.round(100 * m) + '%';
      mass.appendChild(el('div', { class: 'mrow' + (name === exec ? ' exec' : '') },
        el('span', { class: 'mname', text: cut(name, 30), title: name }), el('span', { class: 'mbar' }, bar),
        el('span', { class: 'mval', text: fmt(m) })));
    });
    side.appendChild(mass);
  }
  side.appendChild(info);
  bodyRow.appendChild(side);
  box.appendChild(bodyRow);
  showDefault();
  return box;
};
