// Run page: progress charts, BaSE pulls, scatter, lineage, calls, programs, errors.
"use strict";

(() => {
  const {el, clear, fill, json, num, sci, int, pct, time, section, kv, table, chart, chartBox} = BV;
  const runId = BV.rawParam("id") || "";  // "+" kept as typed (issue 24, item 15)
  const q = encodeURIComponent(runId);
  const main = document.getElementById("main");

  // Layout is built once; refresh() refills the boxes, the detail panels stay put.
  const box = (id) => el("div", {id});
  const head = box("run-head"), totals = box("totals"), trajBox = box("trajectories");
  const allocBox = box("allocator"), pictureBox = box("picture-box"), lineageBox = box("lineage");
  const callsBox = box("calls"), errorsBox = box("errors");
  const callDetail = box("call-detail"), programDetail = box("program-detail");
  const chartNote = el("p", {class: "muted", id: "chart-note"});
  const pullsSection = section("BaSE allocation: pulls per arm", chartBox("chart-pulls"), allocBox);
  // Several models (issue 25): shown only when /api/run has a "models" section.
  const modelsBox = box("models"), banditBox = box("model-bandit");
  const modelsSection = section("Models", modelsBox, chartBox("chart-models"), banditBox);
  modelsSection.id = "models-section";
  modelsSection.hidden = true;
  // Several objectives (issue 36): shown only when /api/run has a "front" section.
  const frontBox = box("front");
  const frontSection = section("Pareto front", frontBox, chartBox("chart-front-hv"));
  frontSection.id = "front-section";
  frontSection.hidden = true;
  // A run id the store does not hold: one message instead of empty sections (issue 24,
  // item 15); the sections come back if the run appears (a live store).
  const missing = el("div", {id: "missing"});
  const content = el("div", {id: "run-content"},
    section("Run", head, totals),
    modelsSection,
    frontSection,
    section("Running best", el("div", {class: "charts"}, chartBox("chart-calls"), chartBox("chart-flops")), chartNote),
    section("Children", chartBox("chart-scatter")),
    pullsSection,
    section("Trajectories", trajBox),
    section("Best solution", pictureBox),
    section("Lineage of accepted programs", el("p", {class: "muted"},
      "Programs that became a parent or a trajectory's best, with their ancestors. Click one for its code and diff."), lineageBox),
    section("Selected program", programDetail),
    section("Calls", el("p", {class: "muted"}, "Click a call for its prompt, raw reply and attempts."), callsBox),
    section("Selected call", callDetail),
    section("Errors", errorsBox));
  missing.hidden = true;
  fill(main, missing, content);
  fill(programDetail, el("p", {class: "muted"}, "No program selected."));
  fill(callDetail, el("p", {class: "muted"}, "No call selected."));

  let lastPictureKey = null;
  // What the calls table shows of the models: set from each /api/run (issue 25).
  let modelInfo = {several: false, priced: false};
  let runModel = null;  // a call stored without its model (older runs) had the run's
  const usd = (v) => (v === null || v === undefined ? "-" :
    "$" + (Math.abs(v) >= 1 ? Number(v).toFixed(2) : Number(v).toPrecision(3)));

  function renderHead(d) {
    const r = d.run, t = d.totals;
    document.title = BV.visible(r.run_id) + " - basevolve dashboard";
    fill(head, el("h1", {class: "runid", id: "run-title"}, r.run_id),
      el("span", {class: "status " + r.status, id: "run-status"}, r.status),
      r.error ? el("pre", {class: "error"}, r.error) : null);
    fill(totals, kv([
      modelInfo.several ? ["task / models", `${r.task} / ${modelNames(d.models).join("+")}`]
        : ["task / model", `${r.task} / ${r.model}`],
      ["protocol", r.protocol],
      ["allocator / K", `${r.allocator} / ${r.arms}`],
      BV.costBudget(r.config) ? ["budget / breadth N", `${BV.budgetText(r.config, r.budget)} / ${r.breadth}`]
        : ["budget C / depth T / breadth N", `${r.budget} / ${r.depth} / ${r.breadth}`],
      ["seed", r.seed],
      BV.costBudget(r.config) ? ["calls done", el("span", {id: "calls-done"}, `${int(t.calls_done)}`)]
        : ["calls done / C", el("span", {id: "calls-done"}, `${int(t.calls_done)} / ${int(r.budget)}`)],
      ["in flight / lost / failed / retries", `${t.calls_pending} / ${t.calls_lost} / ${t.calls_failed} / ${t.retries}`],
      t.calls_truncated ? ["replies cut at max_tokens", el("span", {class: "cut", id: "calls-truncated"},
        `${int(t.calls_truncated)} of ${int(t.calls_done)} (finish_reason = length: raise --max-tokens)`)] : null,
      ["best score (initial)", el("span", {id: "best-score"}, `${num(t.best_score)} (${num(t.initial_score)})`)],
      ["valid children", `${int(t.valid)} / ${int(t.children)} (${pct(t.valid, t.children)})`],
      ["effective FLOPs", sci(t.flops)],
      ["tokens prompt / cached / completion", `${int(t.prompt_tokens)} / ${int(t.cached_tokens)} / ${int(t.completion_tokens)}`],
      (t.eval_calls || t.eval_cache_hits) ? ["evaluation calls (cache hits), FLOPs / tokens",
        `${int(t.eval_calls)} (${int(t.eval_cache_hits)}), ${sci(t.eval_flops)} / ${int(t.eval_tokens)}` +
        ((r.config || {}).count_eval_calls ? ", charged to the budget" : ", not charged to the budget")] : null,
      ["started / updated", `${time(r.created_at)} / ${time(r.updated_at)}`],
      r.task_sha256 ? ["task identity", `${r.task_kind || "?"} ${r.task_version || r.task_path || ""} sha256 ${String(r.task_sha256).slice(0, 12)}`] : null,
    ].filter(Boolean)));
  }

  function renderCharts(d) {
    const p = d.progress;
    const traj = p.per_trajectory.map((data, i) => ({label: `trajectory ${i}`, data, width: 1, steps: true}));
    const overall = {label: "overall best", data: p.overall, color: "#000", width: 2.5, steps: true};
    const many = traj.length > 1 ? traj : [];
    // A long run's lines come thinned to the points where a best changes (same lines).
    fill(chartNote, p.thinned || d.pulls.thinned ? `Long run: the lines are drawn from ${int(p.calls.length)} of ` +
      `${int(p.points)} points (every change of a running best is kept)` +
      (d.pulls.thinned ? `; pulls per arm from ${int(d.pulls.x.length)} evenly spaced pulls.` : ".") : null);
    chart(document.getElementById("chart-calls"), {
      title: "Running best vs calls", x: p.calls, xLabel: "calls done", yLabel: "best score", intX: true,
      series: [...many, overall]});
    // FLOPs are not strictly increasing only when a call cost 0 FLOPs; uPlot needs sorted x.
    chart(document.getElementById("chart-flops"), {
      title: "Running best vs cumulative effective FLOPs", x: p.flops, xLabel: "FLOPs",
      xFormat: (u, vals) => vals.map((v) => Number(v).toExponential(1)), yLabel: "best score",
      series: [...many, overall]});
    // Valid children in their trajectory's colour (as its running-best line), invalid ones
    // in one red series (issue 24, item 16).
    const s = d.scatter, k = Math.max(p.per_trajectory.length, 1);
    const byTraj = Array.from({length: k}, (_, t) => ({
      label: k > 1 ? `valid, trajectory ${t}` : "valid", color: k > 1 ? BV.PALETTE[t % BV.PALETTE.length] : "#2ca02c",
      points: true, data: s.valid.map((v, i) => {
        const own = s.trajectory[i] >= 0 && s.trajectory[i] < k ? s.trajectory[i] : 0;  // as the lines
        return v !== null && own === t ? v : null;
      })}));
    chart(document.getElementById("chart-scatter"), {
      title: "Child score per call", x: s.x, xLabel: "call index", yLabel: "score", intX: true,
      series: [...byTraj, {label: "invalid", data: s.invalid, color: "#d62728", points: true}]});
    const base = d.run.allocator !== "single" || d.run.arms > 1;
    pullsSection.hidden = !base;
    if (base) {
      chart(document.getElementById("chart-pulls"), {
        title: "Cumulative pulls per arm", x: d.pulls.x, xLabel: "pulls", yLabel: "pulls of the arm", intX: true,
        series: d.pulls.per_arm.map((data, i) => ({label: `arm ${i}`, data, steps: true}))});
      renderAllocator(d.pulls);
    }
  }

  function renderAllocator(pulls) {
    const s = pulls.summary;
    const rows = s && typeof s === "object" && !Array.isArray(s)
      ? Object.entries(s).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)])
      : [["summary", s === null ? "(none yet)" : JSON.stringify(s)]];
    fill(allocBox, el("h3", {}, "Allocator state (last stored summary)"),
      el("div", {id: "allocator-summary"}, kv(rows)),
      el("p", {class: "muted", id: "allocation-events"}, `${int(pulls.events)} allocation events; ` +
        `${int(pulls.asks)} allocator decisions` + (pulls.asks_with_choice === null ? "" :
          `, ${int(pulls.asks_with_choice)} of them with more than one eligible arm`)));
  }

  const modelNames = (m) => (m.configured.length > 1 ? m.configured : m.models.map((x) => x.model));

  function renderModels(d) {
    const m = d.models;
    modelsSection.hidden = !m;
    if (!m) return;
    const rows = m.models;
    const calls = rows.reduce((a, x) => a + x.calls, 0);
    fill(modelsBox, kv([
      ["models", `${rows.length} used` + (m.configured.length ? ` of ${m.configured.length} configured` : "")],
      ["spend", m.cost_usd === null ? "unpriced" : el("span", {id: "models-spend"},
        usd(m.cost_usd) + (m.budget_usd ? ` of ${usd(m.budget_usd)} (--budget-usd)` : ""))],
      m.model_allocator ? ["model bandit / reward", `${m.model_allocator} / ${m.model_reward}`]
        : ["choice", "fixed weights and roles"],
    ]), el("div", {class: "scroll"}, table([
      {key: "model", label: "model", cell: (x) => el("span", {class: "model"}, x.model)},
      {key: "calls", label: "calls (share)", num: true, cell: (x) => `${int(x.calls)} (${BV.pct(x.calls, calls)})`},
      {key: "calls_sent", label: "sent / failed / lost", num: true,
       cell: (x) => `${int(x.calls_sent)} / ${int(x.calls_failed)} / ${int(x.calls_lost)}`},
      {key: "prompt_tokens", label: "tokens prompt (cached) / completion", num: true,
       cell: (x) => `${int(x.prompt_tokens)} (${int(x.cached_tokens)}) / ${int(x.completion_tokens)}`},
      {key: "flops", label: "FLOPs", num: true, cell: (x) => sci(x.flops)},
      {key: "cost_usd", label: "USD", num: true, cell: (x) => usd(x.cost_usd)},
      {key: "children", label: "valid / children", num: true, cell: (x) => `${int(x.valid_children)} / ${int(x.children)}`},
      {key: "improvements", label: "improvements", num: true, cell: (x) => int(x.improvements)},
      {key: "gain", label: "gain", num: true, cell: (x) => num(x.gain)},
    ], rows, {class: "compact", rowClass: () => "model-row"})));
    const b = m.bandit, holder = document.getElementById("chart-models");
    holder.hidden = !b;
    if (!b) { clear(banditBox); return; }
    chart(holder, {
      title: "Model bandit: decisions per model", x: b.x, xLabel: "decisions", yLabel: "decisions for the model",
      intX: true, series: b.per_model.map((data, i) => ({label: b.models[i], data, steps: true}))});
    const summary = b.summary && typeof b.summary === "object" && !Array.isArray(b.summary)
      ? Object.entries(b.summary).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)])
      : [["summary", b.summary === null ? "(none yet)" : JSON.stringify(b.summary)]];
    fill(banditBox,
      el("p", {class: "muted", id: "model-events"}, `${int(b.asks)} decisions, ${int(b.tells)} rewards told, ` +
        `${int(b.cancels)} cancelled` + (b.thinned ? `; the chart is drawn from ${int(b.x.length)} evenly spaced decisions.` : ".")),
      table([
        {key: "model", label: "model", cell: (x) => x.model},
        {key: "decisions", label: "decisions", num: true, cell: (x) => int(x.decisions)},
        {key: "rewards", label: "rewards told", num: true, cell: (x) => int(x.rewards)},
        {key: "mean", label: "mean reward", num: true, cell: (x) => num(x.mean)},
      ], b.models.map((name, i) => ({model: name, decisions: b.per_model[i][b.per_model[i].length - 1],
                                     rewards: b.rewards[i], mean: b.mean_reward[i]})), {class: "compact"}),
      el("h3", {}, `Last ${b.last.length} decisions (newest first)`),
      el("div", {class: "scroll"}, table([
        {key: "call_index", label: "call", num: true, cell: (x) => callLink(x.call_index)},
        {key: "model", label: "model"},
        {key: "eligible", label: "eligible", cell: (x) => (x.eligible === null ? "-" : x.eligible.join(", "))},
        {key: "outcome", label: "outcome"},
        {key: "reward", label: "reward", num: true, cell: (x) => num(x.reward)},
      ], b.last, {class: "compact", rowClass: () => "decision-row"})),
      el("h3", {}, "Model bandit state (stored with the newest decision)"), kv(summary));
  }

  function renderFront(d) {
    const f = d.front;
    frontSection.hidden = !f;
    if (!f) return;
    BVFront.render(frontBox, f);
    const holder = document.getElementById("chart-front-hv");
    holder.hidden = !f.curve;
    if (f.curve) chart(holder, {title: "Hypervolume of the front vs calls", x: f.curve.calls, xLabel: "calls done",
      yLabel: "hypervolume", intX: true, series: [{label: "hypervolume", data: f.curve.hypervolume, color: "#000", steps: true}]});
  }

  function renderTrajectories(d) {
    fill(trajBox, table([
      {key: "trajectory", label: "trajectory", num: true},
      {key: "protocol", label: "protocol"},
      {key: "pulls", label: "pulls", num: true},
      {key: "calls", label: "calls", num: true},
      {key: "children", label: "children", num: true},
      {key: "valid", label: "valid", num: true},
      {key: "best", label: "best", num: true, cell: (t) => num(t.best)},
      {key: "reward", label: "mean reward", num: true, cell: (t) => num(d.pulls.mean_reward[t.trajectory])},
    ], d.trajectories, {class: "compact"}));
  }

  function renderPicture(d) {
    const key = `${d.picture.stored}:${d.totals.best_program_id}`;
    if (key === lastPictureKey) return;
    lastPictureKey = key;
    clear(pictureBox);
    const note = el("p", {class: "muted", id: "picture-note"});
    if (!d.picture.stored) {
      BV.add(note, d.run.status === "finished"
        ? "No stored solution for this run (stores written before solutions were kept, or the best program did not run again)."
        : "The picture appears when the run finishes: the run then stores its best solution's value, which the dashboard draws (it never runs stored code).");
      pictureBox.append(note);
      return;
    }
    const img = el("img", {id: "picture", alt: "picture of the best solution",
                           src: `/api/picture?run=${q}&p=${d.totals.best_program_id}`});
    img.addEventListener("error", async () => {
      const res = await fetch(img.src, {credentials: "same-origin"});
      BV.add(note, await res.text());
      img.hidden = true;
    });
    pictureBox.append(img, note,
      el("p", {}, "Best program: ", progLink(d.totals.best_program_id)));
  }

  const progLink = (id) => (id === null || id === undefined ? "-" :
    el("a", {href: `#program=${id}`, class: "prog"}, `program ${id}`));
  const callLink = (i) => (i === null || i === undefined ? "-" :
    el("a", {href: `#call=${i}`, class: "call"}, `call ${i}`));

  function renderLineage(d) {
    const nodes = new Map(d.lineage.map((n) => [n.id, {...n, kids: []}]));
    const roots = [];
    for (const n of nodes.values()) {
      if (nodes.has(n.parent)) nodes.get(n.parent).kids.push(n); else roots.push(n);
    }
    const list = el("div", {class: "tree", id: "lineage-tree"});
    // Iterative walk: a chain of single children stays at one indent (greedy runs are
    // long chains); a node with several accepted children opens one branch per child.
    const stack = roots.reverse().map((n) => [n, 0, ""]);
    while (stack.length) {
      const [n, depth, mark] = stack.pop();
      const row = el("div", {class: "tree-row" + (n.valid ? "" : " invalid"), data: {id: n.id}},
        mark, progLink(n.id), ` score ${num(n.score)}`,
        n.initial ? " (initial)" : ` · trajectory ${n.trajectory} · gen ${n.generation} · `,
        n.initial ? null : callLink(n.call_index));
      row.style.paddingLeft = `${depth * 18}px`;
      list.append(row);
      const kids = n.kids.sort((a, b) => a.id - b.id);
      if (kids.length === 1) stack.push([kids[0], depth, "\u21b3 "]);
      else for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1, "\u251c "]);
    }
    fill(lineageBox, list, el("p", {class: "muted"}, `${d.lineage.length} programs`));
  }

  // The calls and errors tables come one page at a time (/api/run carries page 1 of
  // each, /api/calls and /api/errors the others); the page shown survives live refreshes.
  const pages = {calls: 1, errors: 1};
  const objects = (frame) => frame.rows.map((row) => Object.fromEntries(frame.columns.map((c, i) => [c, row[i]])));

  function pager(kind, frame, noun) {
    const go = async (page) => {
      pages[kind] = page;
      try { renderTable(kind, await json(`/api/${kind}?run=${q}&page=${page}&size=${frame.size}`)); }
      catch (e) { BV.banner("Could not load: " + e.message); }
    };
    const first = (frame.page - 1) * frame.size;
    const shown = frame.rows.length ? `${int(first + 1)}-${int(first + frame.rows.length)} of ${int(frame.total)} ${noun}`
      : `0 of ${int(frame.total)} ${noun}`;
    return el("div", {class: "pager", id: `${kind}-pager`},
      el("button", {id: `${kind}-first`, disabled: frame.page <= 1 ? "" : null, onclick: () => go(1)}, "first"),
      el("button", {id: `${kind}-prev`, disabled: frame.page <= 1 ? "" : null, onclick: () => go(frame.page - 1)}, "previous"),
      el("span", {id: `${kind}-page-info`}, ` page ${int(frame.page)} of ${int(frame.pages)} (${shown}) `),
      el("button", {id: `${kind}-next`, disabled: frame.page >= frame.pages ? "" : null, onclick: () => go(frame.page + 1)}, "next"),
      el("button", {id: `${kind}-last`, disabled: frame.page >= frame.pages ? "" : null, onclick: () => go(frame.pages)}, "last"));
  }

  function renderTable(kind, frame) {
    if (kind === "calls") renderCalls(frame); else renderErrors(frame);
  }

  function renderCalls(frame) {
    const calls = objects(frame);
    const purpose = frame.columns.includes("purpose");
    const model = modelInfo.several && frame.columns.includes("model");
    const cost = modelInfo.priced && frame.columns.includes("cost_usd");
    const cols = [
      {key: "call_index", label: "call", num: true, cell: (c) => callLink(c.call_index)},
      {key: "trajectory", label: "traj", num: true},
      {key: "generation", label: "gen", num: true},
      purpose ? {key: "purpose", label: "purpose"} : null,
      model ? {key: "model", label: "model", cell: (c) => el("span", {class: "model"}, c.model)} : null,
      {key: "status", label: "status", cell: (c) => el("span", {class: "status " + c.status}, c.status)},
      {key: "prompt_tokens", label: "prompt (cached)", num: true, cell: (c) => `${int(c.prompt_tokens)} (${int(c.cached_tokens)})`},
      {key: "completion_tokens", label: "completion", num: true, cell: (c) => int(c.completion_tokens)},
      {key: "flops", label: "FLOPs", num: true, cell: (c) => sci(c.flops)},
      cost ? {key: "cost_usd", label: "USD", num: true, cell: (c) => usd(c.cost_usd)} : null,
      {key: "latency_s", label: "latency s", num: true, cell: (c) => num(c.latency_s, 2)},
      {key: "attempts", label: "retries", num: true, cell: (c) => Math.max(0, (c.attempts || 0) - 1)},
      {key: "score", label: "child", num: true, cell: (c) => (c.program_id === null ? "-" :
        el("a", {href: `#program=${c.program_id}`}, num(c.score)))},
      {key: "error", label: "error", cell: (c) => (c.error ? el("span", {class: "clip"}, c.error) : "")},
    ].filter(Boolean);
    fill(callsBox, el("div", {class: "scroll"}, table(cols, calls, {
      class: "calls", rowClass: (c) => (c.score !== null && !c.valid ? "invalid" : null),
      onRow: (c) => { location.hash = `call=${c.call_index}`; }})),
      frame.total > frame.size ? pager("calls", frame, "calls") : null);
  }

  function renderErrors(frame) {
    const errors = objects(frame);
    fill(errorsBox, frame.total === 0 ? el("p", {class: "muted"}, "No errors.") : [
      el("div", {class: "scroll"}, table([
        {key: "kind", label: "kind"},
        {key: "call_index", label: "call", cell: (e) => callLink(e.call_index)},
        {key: "program_id", label: "program", cell: (e) => progLink(e.program_id)},
        {key: "trajectory", label: "traj", num: true},
        {key: "error", label: "error", cell: (e) => el("pre", {class: "inline"}, e.error)},
      ], errors, {class: "errors"})),
      frame.total > frame.size ? pager("errors", frame, "errors") : null]);
  }

  const pre = (label, block, cls) => (block === null || block === undefined ? null : [
    el("h3", {}, label, block.clipped ? ` (first ${int(block.text.length)} of ${int(block.chars)} characters)` : ""),
    el("pre", {class: "text " + (cls || "")}, block.text)]);

  async function showCall(index) {
    const c = await json(`/api/call?run=${q}&index=${index}`);
    fill(callDetail, 
      el("h3", {id: "call-title"}, `Call ${c.call_index}`),
      kv([["status", `${c.status}${c.counted ? " (charged)" : " (not charged)"}`],
          ["trajectory / generation / slot", `${c.trajectory} / ${c.generation} / ${c.slot}`],
          c.purpose !== undefined ? ["purpose", c.purpose] : null,
          c.model !== undefined ? ["model", el("span", {id: "call-model"}, c.model === null ? runModel : c.model)] : null,
          c.cost_usd !== undefined && c.cost_usd !== null ? ["USD", usd(c.cost_usd)] : null,
          ["parent", progLink(c.parent_id)],
          ["child", c.program ? [progLink(c.program.program_id), ` score ${num(c.program.score)}`] : "-"],
          ["tokens prompt / cached / completion", `${int(c.prompt_tokens)} / ${int(c.cached_tokens)} / ${int(c.completion_tokens)}`],
          ["FLOPs", sci(c.flops)], ["latency", `${num(c.latency_s, 3)} s`],
          ["finish reason", c.finish_reason || "-"], ["seed", c.seed],
          c.reissue_of !== null ? ["re-issue of call id", c.reissue_of] : null,
          c.error ? ["error", c.error] : null].filter(Boolean)),
      el("h3", {}, `Attempts (${c.attempts.length}; retries ${Math.max(0, c.attempts.length - 1)})`),
      table([{key: "attempt_index", label: "#", num: true}, {key: "status", label: "status"},
             {key: "http_status", label: "HTTP", num: true},
             {key: "latency_s", label: "latency s", num: true, cell: (a) => num(a.latency_s, 3)},
             {key: "prompt_tokens", label: "prompt", num: true}, {key: "completion_tokens", label: "completion", num: true},
             {key: "flops", label: "FLOPs", num: true, cell: (a) => sci(a.flops)},
             {key: "error", label: "error"}], c.attempts, {class: "compact"}),
      c.meta !== undefined && c.meta !== null ? [el("h3", {}, "Meta"), el("pre", {class: "text"}, JSON.stringify(c.meta, null, 2))] : null,
      c.messages.map((m, i) => pre(`Prompt message ${i + 1}: ${m.role}`, m.content, "prompt")),
      pre("Raw reply", c.raw_text, "reply"),
      c.text && c.raw_text && c.text.text !== c.raw_text.text ? pre("Reply text (after thinking was removed)", c.text, "reply") : null);
  }

  async function showProgram(id) {
    const p = await json(`/api/program?run=${q}&id=${id}`);
    const diff = el("pre", {class: "text diff", id: "program-diff"}, (p.diff || []).map((line) =>
      el("span", {class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : null}, line + "\n")));
    const metrics = p.metrics && typeof p.metrics === "object" ? Object.entries(p.metrics).map(([k, v]) => [k, String(v)]) : [];
    fill(programDetail, 
      el("h3", {id: "program-title"}, `Program ${p.program_id}${p.is_initial ? " (initial)" : ""}`),
      kv([["score (strict)", `${num(p.score)} (${num(p.strict_score)})`], ["valid", p.valid ? "yes" : "no"],
          ["trajectory / generation", `${p.trajectory ?? "-"} / ${p.generation}`],
          ["parent", p.parent_id === null ? "-" : [progLink(p.parent_id), ` score ${num(p.parent_score)}`]],
          ["from call", callLink(p.call_index)], ["evaluation", `${num(p.seconds, 3)} s, ${p.isolation || "-"}`],
          ...metrics]),
      p.error ? [el("h3", {}, "Evaluation error"), el("pre", {class: "text error", id: "program-error"}, p.error)] : null,
      p.diff === null ? el("p", {class: "muted"}, "No parent code to diff against.") :
        [el("h3", {}, "Diff against the parent"), diff],
      p.files ? [el("h3", {}, `Files (${p.files.length})`),
        el("ul", {id: "program-files"}, (p.file_diffs || p.files).map((f) =>
          el("li", {}, el("code", {}, f.path), f.status ? ` ${f.status}` : "")))] : null,
      p.files ? p.files.map((f) => pre(`File ${f.path}`, f.code, "code file")) :
        p.code ? pre("Code", p.code, "code") : el("p", {class: "muted"}, "No code (the reply held no program)."),
      pre("stdout", p.stdout), pre("stderr", p.stderr));
    const codeBox = programDetail.querySelector("pre.code");
    if (codeBox) codeBox.id = "program-code";
  }

  async function onHash() {
    const m = /^#(call|program)=(\d+)$/.exec(location.hash);
    if (!m) return;
    try {
      if (m[1] === "call") { await showCall(m[2]); callDetail.scrollIntoView(); }
      else { await showProgram(m[2]); programDetail.scrollIntoView(); }
    } catch (e) { BV.banner("Could not load: " + e.message); }
  }
  window.addEventListener("hashchange", onHash);

  function showMissing() {
    document.title = "No such run - basevolve dashboard";
    fill(missing, section("No such run",
      el("p", {id: "missing-text"}, "This store has no run ", el("code", {class: "runid"}, runId || "(no id given)"),
        ". ", el("a", {href: "/"}, "The runs page"), " lists every run of the store with a link to its page; " +
        "in a typed address a run id goes after /run?id= as it is (a \"+\" may also be written %2B).")));
    missing.hidden = false;
    content.hidden = true;
  }

  async function refresh() {
    let d;
    try {
      d = await json(`/api/run?id=${q}`);
    } catch (e) {
      if (e.status !== 404) throw e;
      showMissing();
      return;
    }
    missing.hidden = true;
    content.hidden = false;
    for (const kind of ["calls", "errors"]) {  // keep the page the user is reading
      if (pages[kind] !== 1) d[kind] = await json(`/api/${kind}?run=${q}&page=${pages[kind]}&size=${d[kind].size}`);
    }
    modelInfo = {several: Boolean(d.models) && modelNames(d.models).length > 1,
                 priced: Boolean(d.models) && d.models.cost_usd !== null};
    runModel = d.run.model;
    renderHead(d);
    renderModels(d);
    renderFront(d);
    renderCharts(d);
    renderTrajectories(d);
    renderPicture(d);
    renderLineage(d);
    renderCalls(d.calls);
    renderErrors(d.errors);
    document.body.dataset.callsDone = String(d.totals.calls_done);
  }

  BV.live(refresh);
  onHash();
})();
