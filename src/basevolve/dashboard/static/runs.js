// Runs page: sweeps overview + one page of runs, sorted and filtered on the server.
"use strict";

(() => {
  const {el, clear, fill, json, num, sci, int, time, runLink, sweepLink, table, section} = BV;
  const state = Object.fromEntries(BV.params());
  state.sort = state.sort || "started";
  state.dir = state.dir || "desc";
  state.page = Number(state.page || 1);
  state.size = Number(state.size || 50);

  const main = document.getElementById("main");
  const sweepsBox = el("div", {id: "sweeps"});
  const controls = el("div", {class: "controls"});
  const runsBox = el("div", {id: "runs"});
  const pager = el("div", {class: "pager", id: "pager"});
  fill(main, section("Sweeps", sweepsBox), section("Runs", controls, runsBox, pager));

  function query() {
    const q = new URLSearchParams();
    for (const k of ["sort", "dir", "page", "size", "status", "q", "sweep"]) {
      if (state[k] !== undefined && state[k] !== "") q.set(k, state[k]);
    }
    return q.toString();
  }

  function go(changes) {
    Object.assign(state, changes);
    history.replaceState(null, "", "/?" + query());
    refresh();
  }

  // Filter controls are built once so typing is never interrupted by a live refresh.
  const search = el("input", {type: "search", id: "filter", placeholder: "filter: run id, task, model, protocol, allocator",
                             value: state.q || ""});
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => go({q: search.value, page: 1}), 250);
  });
  const status = el("select", {id: "status"}, el("option", {value: ""}, "any status"),
    ["created", "running", "finished", "failed", "interrupted"].map((s) => el("option", {value: s}, s)));
  status.value = state.status || "";
  status.addEventListener("change", () => go({status: status.value, page: 1}));
  const size = el("select", {id: "size"}, [25, 50, 100, 200].map((n) => el("option", {value: n}, n + " per page")));
  size.value = String(state.size);
  size.addEventListener("change", () => go({size: Number(size.value), page: 1}));
  const sweepNote = el("span", {class: "muted", id: "sweep-filter"});
  controls.append(search, status, size, sweepNote);

  const columns = [
    {key: "run_id", label: "run", sort: true, cell: (r) => runLink(r.run_id)},
    {key: "status", label: "status", sort: true, cell: (r) => el("span", {class: "status " + r.status}, r.status)},
    {key: "task", label: "task", sort: true},
    // a run of several models (issue 25): its models, compactly ("weak+strong")
    {key: "model", label: "model", sort: true, cell: (r) => (r.models ? el("span", {class: "models"}, r.models.join("+")) : r.model)},
    {key: "protocol", label: "protocol", sort: true},
    {key: "allocator", label: "allocator / K", sort: true, cell: (r) => `${r.allocator} / ${r.arms}`},
    {key: "budget", label: "C", sort: true, num: true, cell: (r) => BV.budgetText(r, r.budget)},
    {key: "depth", label: "T", sort: true, num: true, cell: (r) => (BV.costBudget(r) ? "-" : r.depth)},
    {key: "calls", label: "calls done / C", sort: true, num: true,
     cell: (r) => (BV.costBudget(r) ? `${int(r.calls_done)}` : `${int(r.calls_done)} / ${int(r.budget)}`)},
    {key: "best", label: "best", sort: true, num: true, cell: (r) => num(r.best_score)},
    {key: "flops", label: "FLOPs", sort: true, num: true, cell: (r) => sci(r.flops)},
    {key: "started", label: "started", sort: true, cell: (r) => time(r.created_at)},
    {key: "sweep", label: "sweep", sort: true, cell: (r) => (r.sweep === null ? "" : sweepLink(r.sweep))},
  ];

  function renderSweeps(sweeps) {
    const rows = sweeps.map((s) => ({...s, id: s.sweep === null ? "none" : s.sweep}));
    fill(sweepsBox, table([
      {key: "sweep", label: "sweep", cell: (s) => (s.sweep === null ? sweepLink("none", "(runs outside any sweep)") : sweepLink(s.sweep))},
      {key: "runs", label: "runs", num: true, cell: (s) => int(s.runs)},
      {key: "finished", label: "finished", num: true, cell: (s) => int(s.finished)},
      {key: "running", label: "running", num: true, cell: (s) => int(s.running)},
      {key: "best", label: "best (finished)", num: true, cell: (s) => num(s.best_finished)},
      {key: "filter", label: "", cell: (s) => (s.sweep === null ? "" :
        el("a", {href: "#", onclick: (e) => { e.preventDefault(); go({sweep: s.sweep, page: 1}); }}, "show runs"))},
    ], rows, {class: "compact"}));
  }

  async function refresh() {
    const data = await json("/api/runs?" + query());
    renderSweeps(data.sweeps);
    clear(sweepNote);
    if (state.sweep) {
      BV.add(sweepNote, ["sweep ", el("b", {}, state.sweep), " ",
        el("a", {href: "#", onclick: (e) => { e.preventDefault(); go({sweep: "", page: 1}); }}, "(show all)")]);
    }
    fill(runsBox, table(columns, data.runs, {
      sort: data.sort, dir: data.dir, class: "runs",
      onSort: (key) => go({sort: key, dir: state.sort === key && state.dir === "desc" ? "asc" : "desc", page: 1}),
    }));
    const pages = Math.max(1, Math.ceil(data.total / data.size));
    fill(pager, 
      el("button", {id: "prev", disabled: data.page <= 1 ? "" : null, onclick: () => go({page: data.page - 1})}, "previous"),
      el("span", {id: "page-info"}, ` page ${data.page} of ${pages} (${int(data.total)} runs) `),
      el("button", {id: "next", disabled: data.page >= pages ? "" : null, onclick: () => go({page: data.page + 1})}, "next"));
  }

  BV.live(refresh);
})();
