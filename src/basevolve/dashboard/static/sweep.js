// Sweep page: heat map of mean fitness over (C, T), fitness-FLOPs envelope, reliability.
"use strict";

(() => {
  const {el, clear, fill, json, num, sci, int, section, table, chart, chartBox, sweepLink} = BV;
  const params = BV.params();
  const sweepId = BV.rawParam("id") || "all";  // "+" kept (issue 24, item 15)
  const main = document.getElementById("main");
  const head = el("div", {id: "sweep-head"}), heat = el("div", {id: "heatmaps"});
  const env = el("div", {id: "envelopes"}), rel = el("div", {id: "reliability"});
  const tauInput = el("input", {id: "tau", value: params.get("tau") || "", placeholder: "0.9,0.95,0.99"});
  tauInput.addEventListener("change", () => {
    const p = BV.params();
    if (tauInput.value) p.set("tau", tauInput.value); else p.delete("tau");
    history.replaceState(null, "", "/sweep?" + p.toString());
    refresh();
  });
  fill(main, section("Sweep", head),
    section("Mean fitness over (C, T)", el("p", {class: "muted"},
      "Greedy depth-breadth cells of finished runs: mean best fitness over seeds (n runs)."), heat),
    section("Fitness-FLOPs envelope", el("p", {class: "muted"},
      "Per budget C: the best cell mean over depths (v_max) at the mean effective FLOPs of that budget; dots are all cells."), env),
    section("Reliability per configuration", el("p", {class: "muted"},
      "Finished runs only: mean, interquartile mean, 95% stratified-bootstrap CI of the mean (1000 resamples, seeded) and the fraction of runs reaching each threshold. Thresholds: "),
    tauInput, rel));

  // White -> blue over [lo, hi]: a colour set through the CSSOM (allowed by the CSP).
  function shade(v, lo, hi) {
    const f = hi > lo ? (v - lo) / (hi - lo) : 1;
    const c = (a, b) => Math.round(a + (b - a) * f);
    return [`rgb(${c(247, 8)}, ${c(251, 81)}, ${c(255, 156)})`, f > 0.55 ? "#fff" : "#000"];
  }

  function renderHeat(maps) {
    clear(heat);
    if (!maps.length) { BV.add(heat, el("p", {class: "muted"}, "No finished greedy (allocator single) runs in this group.")); return; }
    for (const m of maps) {
      const vals = m.cells.flat().filter(Boolean).map((c) => c.mean);
      const lo = Math.min(...vals), hi = Math.max(...vals);
      const rows = m.depths.map((t, i) => el("tr", {}, el("th", {}, `T=${t}`), m.cells[i].map((c) => {
        if (!c) return el("td", {class: "empty"}, "");
        const td = el("td", {class: "heat", title: `mean ${c.mean} over ${c.n} runs, FLOPs ${sci(c.flops)}`},
          num(c.mean, 3), el("small", {}, ` (${c.n})`));
        const [bg, fg] = shade(c.mean, lo, hi);
        td.style.backgroundColor = bg;
        td.style.color = fg;
        return td;
      })));
      BV.add(heat, [el("h3", {}, `${m.task} · ${m.model}`),
        el("table", {class: "heatmap", data: {cells: vals.length}},
          el("thead", {}, el("tr", {}, el("th", {}, "T \\ C"), m.budgets.map((b) => el("th", {}, `C=${b}`)))),
          el("tbody", {}, rows))]);
    }
  }

  function renderEnvelopes(list) {
    clear(env);
    if (!list.length) { env.append(el("p", {class: "muted"}, "No finished greedy runs in this group.")); return; }
    list.forEach((e, i) => {
      // uPlot wants one sorted x for all series: merge the envelope and cell x values.  The
      // FLOPs axis is logarithmic, as the report's (issue 24, item 16): FLOPs <= 0 (unknown)
      // cannot be placed on it and are left out.
      const xs = [...new Set([...e.envelope.map((p) => p.flops), ...e.cells.map((p) => p.flops)])]
        .filter((x) => x > 0).sort((a, b) => a - b);
      const at = (pts, key) => xs.map((x) => { const p = pts.find((q) => q.flops === x); return p ? p[key] : null; });
      const id = `chart-envelope-${i}`;
      env.append(el("h3", {}, `${e.task} · ${e.model}`), chartBox(id));
      // best-of-N (T = 1) dashed over a wider v_max line: visible where the two coincide
      chart(document.getElementById(id), {
        title: "Fitness vs effective FLOPs", x: xs, xLabel: "FLOPs (log)", yLabel: "mean fitness", logX: true,
        xFormat: (u, vals) => vals.map((v) => (v === null ? "" : Number(v).toExponential(1))),
        series: [{label: "envelope v_max", data: at(e.envelope, "v_max"), color: "#000", width: 3, markers: true, pointSize: 12},
                 {label: "best-of-N (T=1)", data: at(e.envelope, "v_t1"), color: "#ff7f0e", width: 1.5, dash: [6, 4], markers: true},
                 {label: "cells", data: at(e.cells, "fitness"), color: "#1f77b4", points: true}]});
    });
  }

  function renderReliability(rows, taus) {
    fill(rel, rows.length === 0 ? el("p", {class: "muted"}, "No finished runs yet.") :
      el("div", {class: "scroll"}, table([
        {key: "task", label: "task"}, {key: "model", label: "model"},
        {key: "budget", label: "C", num: true}, {key: "method", label: "method"},
        {key: "n", label: "n", num: true},
        {key: "mean", label: "mean", num: true, cell: (r) => num(r.mean)},
        {key: "iqm", label: "IQM", num: true, cell: (r) => num(r.iqm)},
        {key: "ci", label: "95% CI", num: true, cell: (r) => `[${num(r.ci_low)}, ${num(r.ci_high)}]`},
        ...taus.map((t, i) => ({key: `p${i}`, label: `P(\u2265 ${t})`, num: true, cell: (r) => num(r.p_ge[i], 2)})),
        {key: "runs", label: "runs", cell: (r) => r.run_ids.slice(0, 3).map((id) => [BV.runLink(id), " "])},
      ], rows, {class: "reliability"})));
  }

  async function refresh() {
    const tau = BV.params().get("tau");
    const d = await json(`/api/sweep?id=${encodeURIComponent(sweepId)}` + (tau ? `&tau=${encodeURIComponent(tau)}` : ""));
    const title = sweepId === "all" ? "All runs in the store" : sweepId === "none" ? "Runs outside any sweep" : `Sweep ${sweepId}`;
    const unfinished = Object.entries(d.unfinished).map(([k, v]) => `${v} ${k}`).join(", ");
    fill(head, el("h1", {id: "sweep-title"}, title),
      el("p", {}, `${int(d.runs)} runs, ${int(d.finished)} finished` + (unfinished ? ` (left out: ${unfinished})` : ""), " · ",
        sweepId === "all" || sweepId === "none" ? el("a", {href: "/"}, "runs list")
          : el("a", {href: "/?sweep=" + encodeURIComponent(sweepId)}, "runs of this sweep")));
    tauInput.placeholder = d.taus.join(",");
    renderHeat(d.heatmaps);
    renderEnvelopes(d.envelopes);
    renderReliability(d.reliability, d.taus);
  }

  void sweepLink;
  BV.live(refresh);
})();
