// smcplan trajectory viewer. Draws the JSON embedded in the script element #data (built by
// smcplan/eval/viewer/data.py): texts are indices into DATA.strings. Only textContent and
// SVG elements are written (logged text is never parsed as HTML); nothing is fetched.
'use strict';
(function () {
  const DATA = JSON.parse(document.getElementById('data').textContent);
  const S = DATA.strings;
  // the SVG namespace name (an identifier, not an address that is fetched)
  const SVGNS = ['http:', '', 'www.w3.org', '2000', 'svg'].join('/');
  const str = (i) => (i === null || i === undefined ? '' : S[i]);
  const fmt = (x, d = 2) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
  const cut = (s, n) => (s.length <= n ? s : s.slice(0, n - 1) + '…');

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of kids) if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const chip = (text, cls, attrs) => el('span', Object.assign({ class: 'chip ' + (cls || ''), text }, attrs || {}));

  // ------------------------------------------------------------------ selection and URL hash
  const runSel = document.getElementById('run');
  const epSel = document.getElementById('ep');
  const onlyPlan = document.getElementById('only-plan');
  const hash = Object.fromEntries(location.hash.slice(1).split('&').filter(Boolean).map((kv) => kv.split('=')));
  DATA.runs.forEach((r, i) => runSel.appendChild(new Option(r.label + ' — ' + r.path, i)));
  function outcome(e) { return e.status === 'error' ? 'error' : (e.won ? 'won' : 'lost'); }
  function fillEpisodes() {
    epSel.innerHTML = '';
    DATA.runs[runSel.value].episodes.forEach((e, i) => {
      const planned = e.trajectory.filter((s) => s.plan).length;
      epSel.appendChild(new Option(`${e.id} [${outcome(e)}, ${e.steps} steps${planned ? ', ' + planned + ' planner calls' : ''}]`, i));
    });
  }

  // ------------------------------------------------------------------ episode header
  function header(run, e) {
    const box = document.getElementById('episode');
    box.innerHTML = '';
    const st = outcome(e);
    box.appendChild(el('div', { class: 'ephead' },
      el('span', { class: 'badge ' + st, text: st === 'error' ? 'ERROR' : st.toUpperCase() }),
      el('span', { class: 'env', text: e.env }),
      el('span', { class: 'goal', text: str(e.goal) }),
      el('span', { class: 'muted', text: `score ${fmt(e.score)} · ${e.steps} steps · ${run.agent || run.label}` })));
    if (e.error !== null) box.appendChild(el('p', { class: 'error', text: str(e.error) }));
    if (DATA.scale < 1) box.appendChild(el('p', { class: 'warn', text: `texts cut to ${DATA.scale} of their usual length to keep this file small` }));
    if (e.first_observation !== null) {
      box.appendChild(el('details', { class: 'obs' }, el('summary', { text: 'first observation' }),
        el('pre', { text: str(e.first_observation) })));
    }
  }

  // ------------------------------------------------------------------ timeline
  function timeline(e) {
    const box = document.getElementById('timeline');
    box.innerHTML = '';
    const row = el('div', { class: 'cells' });
    const trials = new Set(e.trajectory.map((s) => s.trial)).size;
    e.trajectory.forEach((s, k) => {
      const last = k === e.trajectory.length - 1;
      const cell = el('button', { class: 'tcell' + (s.plan ? ' planned' : '') + (s.invalid ? ' invalid' : ''),
        title: `t=${s.t}: ${str(s.action)} (score ${fmt(s.score)})`, 'data-k': k });
      const bar = el('i', { class: 'score' });
      bar.style.height = Math.round(100 * Math.max(0, Math.min(1, s.score || 0))) + '%';
      cell.appendChild(bar);
      cell.appendChild(el('b', { text: (trials > 1 ? s.trial + '·' : '') + s.t }));
      cell.appendChild(el('span', { class: 'tact', text: cut(str(s.action), 22) }));
      const marks = el('span', { class: 'marks' });
      if (s.plan) marks.appendChild(el('i', { class: 'm-plan', text: '◆', title: 'slow thinking ran' }));
      if (s.rejections) marks.appendChild(el('i', { class: 'm-rej', text: '✗' + s.rejections, title: s.rejections + ' proposals rejected' }));
      if (s.invalid) marks.appendChild(el('i', { class: 'm-inv', text: '!', title: 'invalid action' }));
      if (s.rlvmr && s.rlvmr.tag) marks.appendChild(el('i', { class: 'm-tag tag-' + s.rlvmr.tag, text: s.rlvmr.tag.slice(0, 4) }));
      if (s.rlaw && s.rlaw.regenerations) marks.appendChild(el('i', { class: 'm-rej', text: '↺' + s.rlaw.regenerations, title: 'critic regenerations' }));
      cell.appendChild(marks);
      if (last && s.done) cell.appendChild(el('span', { class: 'badge ' + (s.won ? 'won' : 'lost'), text: s.won ? 'WON' : 'LOST' }));
      cell.onclick = () => { const c = document.getElementById('step-' + k); if (c) { c.scrollIntoView({ block: 'start' }); c.classList.add('flash'); setTimeout(() => c.classList.remove('flash'), 900); } };
      row.appendChild(cell);
    });
    box.appendChild(row);
    box.appendChild(el('div', { class: 'legend muted', text: 'bar = score · ◆ slow thinking · ✗n proposals rejected (reflection / critic) · ↺n critic regenerations · ! invalid action' }));
  }

  // ------------------------------------------------------------------ per-step parts
  function votes(p) {
    const box = el('span', { class: 'votes' });
    if (p.votes) {
      const y = p.votes.filter(Boolean).length;
      box.title = `reflection: ${y} of ${p.votes.length} said Yes`;
      p.votes.forEach((v) => box.appendChild(el('i', { class: v ? 'v yes' : 'v no' })));
      box.appendChild(el('small', { text: ` ${Math.round(100 * y / p.votes.length)}% yes` }));
    } else if (p.yes !== null) {
      box.appendChild(el('small', { text: `${Math.round(100 * p.yes)}% yes` }));
    }
    return box;
  }
  function meter(x, label) {
    const m = el('span', { class: 'meter', title: label });
    const f = el('i');
    f.style.width = Math.round(100 * Math.max(0, Math.min(1, x))) + '%';
    m.appendChild(f);
    return el('span', { class: 'critic' }, m, el('small', { text: ' ' + fmt(x) }));
  }
  function proposals(s) {
    const judged = s.props.some((p) => p.rej || p.votes || p.yes !== null || p.critic !== null);
    if (!judged && s.props.length <= 1) return null;
    const box = el('div', { class: 'props' }, el('h4', { text: 'Proposals' }));
    s.props.forEach((p) => {
      const row = el('div', { class: 'prop' + (p.rej ? ' rejected' : ' accepted') },
        el('span', { class: 'icon', text: p.rej ? '✗' : '✓' }),
        el('span', { class: 'pa', text: str(p.a) }));
      if (p.tag) row.appendChild(chip(p.tag, 'tag tag-' + p.tag));
      if (p.votes || p.yes !== null) row.appendChild(votes(p));
      if (p.critic !== null) row.appendChild(meter(p.critic, 'critic score'));
      box.appendChild(row);
      if (p.th !== null && s.props.length > 1) box.appendChild(el('div', { class: 'why thought', text: str(p.th) }));
      if (p.why !== null) box.appendChild(el('div', { class: 'why', text: (p.by ? p.by + ': ' : '') + str(p.why) }));
    });
    if (s.executed === 'planner') box.appendChild(el('div', { class: 'why strong', text: '→ every proposal was rejected: slow thinking chose the action (below)' }));
    if (s.executed === 'fallback') box.appendChild(el('div', { class: 'why strong', text: '→ every proposal was rejected: the best-judged one was executed' }));
    return box;
  }
  function kg(s) {
    if (!s.kg) return null;
    const box = el('div', { class: 'kg' }, el('h4', { text: 'Knowledge graph' + (s.kg.size !== null && s.kg.size !== undefined ? ` (${s.kg.size} facts)` : '') }));
    // removed facts first (rarer, more telling), then added; beyond SHOWN the rest is folded
    const all = s.kg.removed.map((f) => chip('− ' + str(f), 'rem', { 'data-kg': 'removed' }))
      .concat(s.kg.added.map((f) => chip('+ ' + str(f), 'add', { 'data-kg': 'added' })));
    const SHOWN = 8, chips = el('div', { class: 'chips' });
    all.slice(0, SHOWN).forEach((c) => chips.appendChild(c));
    if (!all.length) chips.appendChild(el('span', { class: 'muted', text: 'no change' }));
    box.appendChild(chips);
    if (all.length > SHOWN) {
      const rest = el('div', { class: 'chips' });
      all.slice(SHOWN).forEach((c) => rest.appendChild(c));
      box.appendChild(el('details', { class: 'retrieved' }, el('summary', { text: `${all.length - SHOWN} more changes` }), rest));
    }
    if (s.kg.retrieved.length) {
      const d = el('details', { class: 'retrieved' }, el('summary', { text: `retrieved facts (${s.kg.retrieved.length})` }));
      const c = el('div', { class: 'chips' });
      s.kg.retrieved.forEach((f) => c.appendChild(chip(str(f), 'ret')));
      d.appendChild(c);
      box.appendChild(d);
    }
    return box;
  }
  function extras(s) {
    const box = el('div', { class: 'extras' });
    if (s.rlaw) {
      const r = s.rlaw;
      box.appendChild(el('div', { class: 'kv' }, el('b', { text: 'RLAW ' }),
        r.r_critique !== null ? meter(r.r_critique, 'R_critique of the executed action') : null,
        el('span', { text: ` · regenerations ${r.regenerations ?? 0} · return G = ${fmt(r.return)}` + (r.r_env_prev !== null ? ` · previous R_env ${fmt(r.r_env_prev)}` : '') })));
    }
    if (s.rlvmr) {
      const r = s.rlvmr, w = r.reward || {};
      const line = el('div', { class: 'kv' }, el('b', { text: 'RLVMR ' }));
      if (r.tag) line.appendChild(chip(r.tag, 'tag tag-' + r.tag));
      line.appendChild(el('span', { text: ` process reward ${fmt(w.total)} = meta ${fmt(w.meta)} + format ${fmt(w.format)}` + (w.rule ? ` (${w.rule}${w.pending ? ', pending' : ''})` : '') + ` · return ${fmt(r.return)}` }));
      if (r.well_formed === false) line.appendChild(el('span', { class: 'warn', text: ' malformed: ' + (r.problem || '') }));
      if (r.guided) line.appendChild(el('span', { class: 'muted', text: ` · reward-guided (model chose "${str(r.model_choice)}")` }));
      box.appendChild(line);
    }
    if (s.belief !== undefined) box.appendChild(el('div', { class: 'kv' }, el('b', { text: 'belief ' }), el('span', { text: str(s.belief) })));
    if (s.notes) s.notes.forEach((n) => box.appendChild(el('div', { class: 'kv' }, el('b', { text: 'reflection ' }), el('span', { text: str(n) }))));
    return box.childNodes.length ? box : null;
  }
  function stepCard(s, k) {
    const card = el('article', { class: 'step' + (s.plan ? ' has-plan' : ''), id: 'step-' + k, 'data-t': s.t });
    const head = el('header', {}, el('span', { class: 'tnum', text: 't=' + s.t }), el('span', { class: 'act', text: str(s.action) }));
    if (s.tag) head.appendChild(chip(s.tag, 'tag tag-' + s.tag));
    if (s.executed && s.executed !== 'proposal') head.appendChild(chip(s.executed, 'exec-' + s.executed));
    if (s.invalid) head.appendChild(chip('invalid', 'inv'));
    head.appendChild(el('span', { class: 'muted right', text: `score ${fmt(s.score)}` + (s.llm ? ` · ${s.llm} LM calls` : '') }));
    card.appendChild(head);
    const body = el('div', { class: 'sbody' });
    const main = el('div', { class: 'smain' });
    if (s.thought !== null) main.appendChild(el('p', { class: 'thought', text: str(s.thought) }));
    main.appendChild(el('p', { class: 'feedback', text: '→ ' + str(s.feedback) }));
    [proposals(s), extras(s)].forEach((x) => x && main.appendChild(x));
    body.appendChild(main);
    const side = kg(s);
    if (side) body.appendChild(el('div', { class: 'sside' }, side));
    card.appendChild(body);
    if (s.plan) card.appendChild(window.smcplanGenealogy(s.plan, s, { el, sv, str, fmt, cut, chip }));
    if (s.more !== undefined) card.appendChild(el('details', { class: 'more' }, el('summary', { text: 'more' }), el('pre', { text: str(s.more) })));
    return card;
  }

  function render() {
    const run = DATA.runs[runSel.value];
    const e = run && run.episodes[epSel.value];
    const steps = document.getElementById('steps');
    steps.innerHTML = '';
    if (!e) return;
    header(run, e);
    timeline(e);
    e.trajectory.forEach((s, k) => { if (!onlyPlan.checked || s.plan) steps.appendChild(stepCard(s, k)); });
  }
  runSel.onchange = () => { fillEpisodes(); render(); };
  epSel.onchange = render;
  onlyPlan.onchange = render;
  window.smcplanStart = function () {
    if (!DATA.runs.length) return;
    runSel.value = Math.min(+hash.run || 0, DATA.runs.length - 1);
    fillEpisodes();
    epSel.value = Math.min(+hash.ep || 0, DATA.runs[runSel.value].episodes.length - 1);
    if (hash.only === 'plan') onlyPlan.checked = true;
    render();
    if (hash.t !== undefined) {
      const card = document.querySelector(`article.step[data-t="${+hash.t}"]`);
      if (card && hash.focus) document.querySelectorAll('article.step').forEach((c) => { if (c !== card) c.remove(); });
      else if (card) card.scrollIntoView({ block: 'start' });
    }
  };
})();
