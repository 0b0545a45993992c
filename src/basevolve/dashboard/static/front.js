// The run page's front section (issue 36): one scatter per objective pair, front members
// highlighted, every point a link to its program (#program=ID), and the front's
// hypervolume per call.  Objective names come from the task (outside text): they reach
// the DOM only as text nodes (BV.visible), like every other value of the store.
"use strict";

const BVFront = (() => {
  const {el, fill, num} = BV;
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_PAIRS = 6;
  const W = 420, H = 320, PAD = {l: 58, r: 12, t: 12, b: 44};

  function svg(tag, attrs, ...kids) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    for (const kid of kids) node.append(kid instanceof Node ? kid : document.createTextNode(BV.visible(kid)));
    return node;
  }

  function scale(values, lo, hi) {
    let min = Math.min(...values), max = Math.max(...values);
    if (!(max > min)) { min -= 1; max += 1; }
    const pad = (max - min) * 0.05;
    min -= pad; max += pad;
    return {f: (v) => lo + (v - min) / (max - min) * (hi - lo), min, max};
  }

  const label = (o) => `${o.name} (${o.direction === "max" ? "higher is better" : "lower is better"})`;

  function scatter(f, i, j) {
    const p = f.points, xs = p.vector.map((v) => v[i]), ys = p.vector.map((v) => v[j]);
    const sx = scale(xs, PAD.l, W - PAD.r), sy = scale(ys, H - PAD.b, PAD.t);
    const plot = svg("svg", {class: "front-plot", viewBox: `0 0 ${W} ${H}`, width: W, height: H,
                            role: "img", "data-pair": `${i},${j}`});
    plot.append(svg("rect", {x: PAD.l, y: PAD.t, width: W - PAD.l - PAD.r, height: H - PAD.t - PAD.b,
                             class: "front-frame"}));
    for (const [s, axis] of [[sx, "x"], [sy, "y"]]) {
      for (let t = 0; t <= 4; t++) {
        const v = s.min + (s.max - s.min) * t / 4, at = s.f(v);
        plot.append(axis === "x"
          ? svg("text", {x: at, y: H - PAD.b + 14, class: "front-tick", "text-anchor": "middle"}, num(v, 3))
          : svg("text", {x: PAD.l - 4, y: at + 3, class: "front-tick", "text-anchor": "end"}, num(v, 3)));
      }
    }
    plot.append(svg("text", {x: (PAD.l + W - PAD.r) / 2, y: H - 6, class: "front-axis x-label",
                             "text-anchor": "middle"}, label(f.objectives[i])));
    plot.append(svg("text", {x: 12, y: (PAD.t + H - PAD.b) / 2, class: "front-axis y-label",
                             "text-anchor": "middle", transform: `rotate(-90 12 ${(PAD.t + H - PAD.b) / 2})`},
                    label(f.objectives[j])));
    // others first, the front on top; each point a link to its program's page
    const order = p.front.map((on, k) => [on, k]).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
    for (const k of order) {
      const on = p.front[k];
      const tip = `program ${p.program_id[k]}${p.initial[k] ? " (initial)" : ""}` +
        (on ? " - on the front" : "") + "\n" +
        f.objectives.map((o, m) => `${o.name} = ${p.vector[k][m]}`).join("\n");
      const dot = svg("circle", {cx: sx.f(xs[k]), cy: sy.f(ys[k]), r: on ? 5 : 3,
                                 class: on ? "front-member" : "front-other"}, svg("title", {}, tip));
      const link = svg("a", {href: `#program=${p.program_id[k]}`, class: on ? "front-link on" : "front-link",
                             "data-program": p.program_id[k]}, dot);
      plot.append(link);
    }
    return plot;
  }

  function render(box, f) {
    const m = f.objectives.length, pairs = [];
    for (let i = 0; i < m; i++) for (let j = i + 1; j < m; j++) pairs.push([i, j]);
    const shown = pairs.slice(0, MAX_PAIRS);
    fill(box,
      BV.kv([
        ["objectives", el("span", {id: "front-objectives"}, f.objectives.map(label).join(", "))],
        ["front / programs with a vector", el("span", {id: "front-size"}, `${f.front_size} / ${f.programs}`)],
        ["hypervolume", el("span", {id: "front-hv"}, num(f.hypervolume))],
        ["reference point", f.reference === null ? "unknown (the initial program has no vector)"
          : f.reference.map((v) => num(v, 4)).join(", ") + (f.reference_derived ? " (derived from the initial program)" : "")],
      ]),
      f.thinned ? el("p", {class: "muted"}, `Every front member is drawn, and an even sample of the other ${BV.int(f.programs - f.front_size)} programs.`) : null,
      el("div", {class: "front-plots", id: "front-plots"}, shown.map(([i, j]) => scatter(f, i, j))),
      pairs.length > shown.length ? el("p", {class: "muted"}, `First ${shown.length} of ${pairs.length} objective pairs.`) : null,
      el("p", {class: "muted"}, "Large dots: the run's Pareto front. Click a dot for its program."));
  }

  return {render};
})();
