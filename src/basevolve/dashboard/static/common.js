// Shared helpers of the basevolve dashboard pages.
//
// Safety rule of this code base: text from the store (programs, prompts, replies,
// errors, run ids, ...) reaches the DOM only as text nodes, made by BV.el/BV.text
// after BV.visible turned control and bidi characters into visible marks.  No
// innerHTML, no insertAdjacentHTML, no document.write anywhere.
"use strict";

const BV = (() => {
  const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

  function visible(value) {
    if (value === null || value === undefined) return "";
    return String(value)
      .replace(CONTROL, (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)))
      .replace(BIDI, (c) => "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9");
  }

  function text(value) {
    return document.createTextNode(visible(value));
  }

  // el("a", {href: "/run?id=" + encodeURIComponent(id)}, "label", child, ...)
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [key, val] of Object.entries(attrs || {})) {
      if (val === null || val === undefined || val === false) continue;
      if (key === "class") node.className = val;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), val);
      else if (key === "title") node.title = visible(val);
      else if (key === "data") for (const [k, v] of Object.entries(val)) node.dataset[k] = String(v);
      else node.setAttribute(key, String(val));
    }
    return add(node, kids);
  }

  // Append children: nodes as they are, arrays flattened, null/undefined/false skipped,
  // anything else as a text node (never parsed as HTML).
  function add(node, kids) {
    for (const kid of [kids].flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : text(kid));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // Replace a node's children (the only way pages fill a box).
  const fill = (node, ...kids) => add(clear(node), kids);

  function banner(message) {
    const b = document.getElementById("banner");
    if (!message) { b.hidden = true; return; }
    fill(b, message);
    b.hidden = false;
  }

  async function json(url) {
    const res = await fetch(url, {credentials: "same-origin", cache: "no-store"});
    if (!res.ok) {
      let msg = res.status + " " + res.statusText;
      try { msg = (await res.json()).error || msg; } catch (e) { /* not JSON */ }
      const err = new Error(msg);
      err.status = res.status;
      throw err;
    }
    return res.json();
  }

  const num = (v, digits = 4) => (v === null || v === undefined ? "-" : Number(v).toFixed(digits));
  const sci = (v) => (v === null || v === undefined ? "-" : Number(v).toExponential(3));
  // A run budgeted in FLOPs or tokens (issue 16) has no C: its "budget" column holds only
  // a call cap, so show the budget in its own unit instead.  `c` is a run row or config.
  const costBudget = (c) => Boolean(c && (c.budget_flops || c.budget_tokens));
  const budgetText = (c, calls) => (c && c.budget_flops ? sci(c.budget_flops) + " FLOPs"
    : c && c.budget_tokens ? int(c.budget_tokens) + " tokens" : String(calls));
  const int = (v) => (v === null || v === undefined ? "-" : Number(v).toLocaleString("en-US"));
  const pct = (a, b) => (b ? (100 * a / b).toFixed(1) + "%" : "-");
  function time(epoch) {
    if (!epoch) return "-";
    const d = new Date(epoch * 1000);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  const runLink = (id) => el("a", {href: "/run?id=" + encodeURIComponent(id), class: "runid"}, id);
  const sweepLink = (id, label) =>
    el("a", {href: "/sweep?id=" + encodeURIComponent(id)}, label === undefined ? id : label);

  // A table from rows: columns = [{key, label, cell(row) -> node|string, sort?: true, num?: true}]
  function table(columns, rows, opts = {}) {
    const head = el("tr", {}, columns.map((c) => {
      const th = el("th", {class: c.num ? "num" : null}, c.label);
      if (opts.onSort && c.sort) {
        th.classList.add("sortable");
        if (opts.sort === c.key) th.classList.add(opts.dir === "asc" ? "asc" : "desc");
        th.addEventListener("click", () => opts.onSort(c.key));
      }
      return th;
    }));
    const body = rows.map((r) => {
      const tr = el("tr", {class: opts.rowClass ? opts.rowClass(r) : null},
        columns.map((c) => el("td", {class: c.num ? "num" : null},
          c.cell ? c.cell(r) : r[c.key])));
      if (opts.onRow) {
        tr.classList.add("clickable");
        tr.addEventListener("click", () => opts.onRow(r));
      }
      return tr;
    });
    return el("table", {class: "grid " + (opts.class || "")}, el("thead", {}, head), el("tbody", {}, body));
  }

  function section(title, ...kids) {
    return el("section", {class: "card"}, el("h2", {}, title), ...kids);
  }

  function kv(pairs) {
    return el("dl", {class: "kv"}, pairs.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  // ---------------------------------------------------------------- charts (uPlot)
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const charts = new Map();

  // spec: {title, x: [...], xLabel, yLabel, xFormat, logX, intX, series: [{label, data,
  //        color, width, points (dots only), markers (line with dots), steps (a running
  //        best: held until the next value), dash ([on, off] pixels), pointSize}]}
  // Issue 24, item 16: running-best lines are steps, call axes tick at integers only.
  const INT_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];
  function chart(holder, spec) {
    const data = [spec.x, ...spec.series.map((s) => s.data)];
    let points = 0;
    for (const s of spec.series) for (const v of s.data) if (v !== null && v !== undefined) points++;
    holder.dataset.points = String(points);
    holder.dataset.series = String(spec.series.length);
    holder.dataset.steps = String(spec.series.filter((s) => s.steps).length);  // for the tests
    holder.dataset.logX = spec.logX ? "1" : "0";
    const key = holder.id;
    const old = charts.get(key);
    if (old && old.series.length === spec.series.length + 1 && old.root.isConnected) {
      old.setData(data);
      return old;
    }
    if (old) old.destroy();
    clear(holder);
    const width = Math.max(320, holder.clientWidth || 600);
    const opts = {
      title: spec.title, width, height: spec.height || 260,
      scales: {x: {time: false, distr: spec.logX ? 3 : 1}},
      axes: [{label: spec.xLabel, values: spec.xFormat, space: spec.xFormat ? 90 : 50,
              incrs: spec.intX ? INT_TICKS : undefined},
             {label: spec.yLabel}],
      legend: {show: true},
      // the x ticks uPlot chose, kept on the holder (the browser tests read them)
      hooks: {draw: [(u) => { holder.dataset.xticks = (u.axes[0]._splits || []).join(","); }]},
      series: [{label: spec.xLabel}, ...spec.series.map((s, i) => ({
        label: s.label,
        stroke: s.color || PALETTE[i % PALETTE.length],
        width: s.width || 1.5,
        spanGaps: true,
        paths: s.points ? () => null : s.steps ? uPlot.paths.stepped({align: 1}) : undefined,
        dash: s.dash,
        points: s.points || s.markers
          ? {show: true, size: s.pointSize || (s.points ? 5 : 7), fill: s.color || PALETTE[i % PALETTE.length]}
          : {show: false},
      }))],
    };
    const plot = new uPlot(opts, data, holder);
    charts.set(key, plot);
    return plot;
  }

  function chartBox(id) {
    return el("div", {id, class: "chart"});
  }

  // ---------------------------------------------------------------- live updates
  // One EventSource per page; every "change" event re-runs refresh() (never two at
  // once: a change during a refresh schedules exactly one more).
  function live(refresh) {
    const badge = document.getElementById("live");
    let busy = false, again = false;
    async function run() {
      if (busy) { again = true; return; }
      busy = true;
      try { await refresh(); banner(null); } catch (e) { banner("Could not load: " + e.message); }
      busy = false;
      if (again) { again = false; run(); }
    }
    const source = new EventSource("/api/events");
    source.addEventListener("hello", () => { badge.textContent = "live"; badge.className = "live on"; });
    source.addEventListener("change", () => run());
    source.onerror = () => { badge.textContent = "reconnecting"; badge.className = "live off"; };
    run();
    return run;
  }

  const params = () => new URLSearchParams(location.search);
  // One query parameter as typed, "+" kept (issue 24, item 15): URLSearchParams reads a
  // "+" as a space (form encoding), so a run id such as "a+b" pasted raw into
  // /run?id=a+b became "a b" and the page said "no such run".  Ids never hold spaces;
  // %2B, %20 and the other escapes still decode.
  function rawParam(name) {
    const dec = (s) => { try { return decodeURIComponent(s); } catch (e) { return s; } };
    for (const part of location.search.replace(/^\?/, "").split("&")) {
      const eq = part.indexOf("=");
      if (dec(eq < 0 ? part : part.slice(0, eq)) === name) return eq < 0 ? "" : dec(part.slice(eq + 1));
    }
    return null;
  }

  return {visible, text, el, clear, fill, add, banner, json, num, sci, int, pct, time, runLink, sweepLink,
          table, section, kv, chart, chartBox, live, params, rawParam, PALETTE, costBudget, budgetText};
})();
