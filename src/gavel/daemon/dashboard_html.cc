// The dashboard page: plain HTML and JavaScript, no build step. The page carries the state at
// the time it was served (so that it shows the jobs as soon as it loads, even without
// scripts running later) and then refreshes itself from /api/state every 2 s.
#include "gavel/daemon/observe_http.h"

namespace gavel::daemon {

const char* DashboardHtml() {
  return R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Gavel scheduler</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
.bar { width: 10em; height: 0.8em; background: #eee; display: inline-block; }
.bar span { display: block; height: 100%; background: #4a8; }
#events td { font-family: monospace; font-size: 0.9em; }
</style>
</head>
<body>
<h1>Gavel scheduler</h1>
<p id="summary"></p>
<h2>Jobs</h2>
<table id="jobs"><thead><tr><th>id</th><th class="l">name</th><th class="l">user</th>
<th class="l">state</th><th class="l">progress</th><th>steps</th><th>ETA</th><th class="l">GPU type</th>
</tr></thead><tbody></tbody></table>
<h2>Allocation (share of time per GPU type)</h2>
<table id="allocation"><thead></thead><tbody></tbody></table>
<h2>Utilisation per GPU type (busy / alive)</h2>
<svg id="utilisation" width="720" height="180" role="img"></svg>
<div id="legend"></div>
<h2>Recent events</h2>
<table id="events"><tbody></tbody></table>
<script id="initial-state" type="application/json">@STATE@</script>
<script>
"use strict";
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function eta(s) {
  if (s < 0) return "?";
  if (s < 90) return Math.round(s) + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  return (s / 3600).toFixed(1) + " h";
}
function render(state) {
  const active = state.jobs.filter(j => j.state === "queued" || j.state === "running");
  document.getElementById("summary").textContent =
    "policy " + state.policy + ", round " + state.round_id + " (" +
    Math.round(state.round_elapsed_s) + " of " + state.round_duration_s + " s), " +
    active.length + " active jobs";
  const jobs = document.querySelector("#jobs tbody");
  jobs.replaceChildren();
  for (const j of state.jobs) {
    const tr = el("tr");
    tr.id = "job-" + j.id;
    tr.dataset.state = j.state;
    tr.append(el("td", j.id), el("td", j.name, "l"), el("td", j.user, "l"),
              el("td", j.state, "l"));
    const bar = el("span");
    bar.style.width = (100 * j.progress).toFixed(1) + "%";
    const outer = el("div", undefined, "bar");
    outer.append(bar);
    const cell = el("td", undefined, "l");
    cell.append(outer, " " + (100 * j.progress).toFixed(1) + "%");
    tr.append(cell, el("td", j.steps_done + " / " + j.total_steps),
              el("td", (j.state === "done" ? "-" : eta(j.eta_s))), el("td", j.gpu_type, "l"));
    jobs.append(tr);
  }
  const types = Object.keys(state.gpu_types).sort();
  const head = document.querySelector("#allocation thead");
  const hr = el("tr");
  hr.append(el("th", "job", "l"));
  for (const t of types) hr.append(el("th", t + " (" + state.gpu_types[t] + ")"));
  head.replaceChildren(hr);
  const body = document.querySelector("#allocation tbody");
  body.replaceChildren();
  for (const j of active) {
    const tr = el("tr");
    tr.append(el("td", j.id + " " + j.name, "l"));
    for (const t of types) tr.append(el("td", (j.allocation[t] || 0).toFixed(2)));
    body.append(tr);
  }
  drawUtilisation(state.utilisation);
  const events = document.querySelector("#events tbody");
  events.replaceChildren();
  for (const e of state.events.slice().reverse()) {
    const tr = el("tr");
    tr.append(el("td", new Date(e.t).toLocaleTimeString(), "l"), el("td", e.kind, "l"),
              el("td", e.job_id ? "job " + e.job_id : "", "l"), el("td", e.message, "l"));
    events.append(tr);
  }
}
function drawUtilisation(samples) {
  const svg = document.getElementById("utilisation");
  const legend = document.getElementById("legend");
  svg.replaceChildren();
  legend.replaceChildren();
  if (samples.length === 0) return;
  const W = 720, H = 180, t0 = samples[0].t, t1 = Math.max(samples[samples.length - 1].t, t0 + 1);
  const types = [...new Set(samples.flatMap(s => Object.keys(s.alive)))].sort();
  types.forEach((type, i) => {
    const points = samples.map(s => {
      const alive = s.alive[type] || 0, busy = s.busy[type] || 0;
      const u = alive ? busy / alive : 0;
      return ((s.t - t0) / (t1 - t0) * (W - 10) + 5).toFixed(1) + "," + (H - 5 - u * (H - 10)).toFixed(1);
    });
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", points.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", COLORS[i % COLORS.length]);
    line.setAttribute("stroke-width", "2");
    svg.append(line);
    const key = el("span", "\u25A0 " + type + "  ");
    key.style.color = COLORS[i % COLORS.length];
    legend.append(key);
  });
}
render(JSON.parse(document.getElementById("initial-state").textContent));
setInterval(() => {
  fetch("/api/state").then(r => r.json()).then(render).catch(() => {});
}, 2000);
</script>
</body>
</html>
)HTML";
}

}  // namespace gavel::daemon
