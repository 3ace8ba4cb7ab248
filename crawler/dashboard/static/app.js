// The dashboard's page: fetches state.json every few seconds and shows it.
// Everything that comes from Redis (host names, node ids, reasons) is put in the
// page as text (textContent, setAttribute), never parsed as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const HOST_COLUMNS = [
  ["requests", "requests"], ["bytes", "bytes"], ["2xx", "2xx"], ["3xx", "3xx"],
  ["4xx", "4xx"], ["5xx", "5xx"], ["errors", "errors"], ["failures", "failures"],
  ["traps", "traps"],
];
let refreshMs = 3000;
let timer = null;

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

function setNumber(id, value) {
  const node = document.getElementById(id);
  if (value === null || value === undefined) {
    node.textContent = "?";
    node.setAttribute("data-value", "");
    return;
  }
  node.textContent = Number(value).toLocaleString("en-US");
  node.setAttribute("data-value", String(value));
}

function fillBody(table, rows) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "?";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m ago`;
  return `${Math.floor(s / 86400)}d${String(Math.floor(s % 86400 / 3600)).padStart(2, "0")}h ago`;
}

function chart(counts, width, height) {
  // Bars of pages a minute, the last hour, oldest on the left.
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  // As wide as its box: the newest minute at the right edge.
  svg.setAttribute("width", "100%");
  svg.setAttribute("height", String(height));
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("class", "bars");
  const top = Math.max(1, ...counts);
  const step = width / counts.length;
  counts.forEach((count, i) => {
    const h = Math.round((count / top) * (height - 2));
    const bar = document.createElementNS(SVG, "rect");
    bar.setAttribute("x", (i * step).toFixed(1));
    bar.setAttribute("y", String(height - h));
    bar.setAttribute("width", Math.max(1, step - 1).toFixed(1));
    bar.setAttribute("height", String(h));
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${count} pages/min`;
    bar.appendChild(title);
    svg.appendChild(bar);
  });
  return svg;
}

function showPace(pace) {
  const cluster = document.getElementById("pace-cluster");
  const peak = Math.max(0, ...pace.cluster);
  cluster.replaceChildren(chart(pace.cluster, 720, 90),
    el("small", `peak ${peak} pages/min; oldest minute on the left`));
  const rows = Object.entries(pace.nodes).map(([node, counts]) => {
    const row = el("tr", null, {"data-node": node});
    const chartCell = el("td");
    chartCell.appendChild(chart(counts, 240, 24));
    row.append(el("td", node), chartCell);
    return row;
  });
  fillBody(document.getElementById("pace-nodes"), rows);
}

function showDepths(byDepth) {
  const top = Math.max(1, ...byDepth.map(([, count]) => count));
  fillBody(document.getElementById("by-depth"), byDepth.map(([depth, count]) => {
    const row = el("tr", null, {"data-depth": depth, "data-count": count});
    const bar = el("td");
    bar.appendChild(el("span", null, {class: "bar"})).style.width = `${Math.round(100 * count / top)}%`;
    row.append(el("td", depth, {class: "num"}), el("td", count.toLocaleString("en-US"), {class: "num"}), bar);
    return row;
  }));
}

function showFates(totals) {
  const rows = Object.entries(totals.failed_by_fate).map(([fate, count]) => {
    const row = el("tr", null, {"data-fate": fate, "data-count": count});
    row.append(el("td", fate), el("td", count.toLocaleString("en-US"), {class: "num"}));
    return row;
  });
  if (!rows.length) rows.push(el("tr", null, {class: "none"}));
  if (!Object.keys(totals.failed_by_fate).length) rows[0].appendChild(el("td", "none", {colspan: 2}));
  fillBody(document.getElementById("fates"), rows);
}

function duration(seconds) {
  return age(seconds).replace(/ ago$/, "");
}

function showProgress(progress, rate) {
  const bar = document.getElementById("progress-bar");
  bar.value = progress.fraction;
  bar.setAttribute("data-value", String(progress.fraction));
  const percent = document.getElementById("progress-percent");
  percent.textContent = `${Math.floor(progress.fraction * 100)}%`;
  percent.setAttribute("data-value", String(progress.fraction));
  setNumber("progress-known", progress.known);
  document.getElementById("elapsed").textContent = progress.elapsed === null ? "?" : duration(progress.elapsed);
  document.getElementById("rate-line").textContent = Math.round(rate).toLocaleString("en-US");
  document.getElementById("eta").textContent = progress.eta;
  const held = progress.next_held === null ? "" :
    `; next held URL due ${new Date(progress.next_held * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC`;
  document.getElementById("next-held").textContent = held;
}

// A node's figure, or "-" for a field its entry does not hold (an older node).
function figure(value, digits) {
  if (value === null || value === undefined) return "-";
  return digits === undefined ? String(value) : Number(value).toFixed(digits);
}

function nodeCells(node) {
  const weight = node.weight === null ? "-" :
    `${node.weight.toFixed(2)}${node.weight_from ? ` (${node.weight_from})` : ""}`;
  const doing = node.drain_asked && node.state !== "draining" ? "drain asked" : figure(node.state);
  const moves = node.shards_in === null && node.shards_out === null ? "-" :
    `${figure(node.shards_in)}/${figure(node.shards_out)}`;
  return [
    ["weight", weight], ["capacity", figure(node.capacity, 2)],
    ["concurrency", figure(node.concurrency)], ["in-flight", figure(node.in_flight)],
    ["ready-hosts", figure(node.ready_hosts)], ["load", figure(node.load, 2)],
  ].map(([name, text]) => el("td", text, {class: "num", "data-field": name}))
    .concat([el("td", doing, {"data-field": "doing"}),
             el("td", moves, {class: "num", "data-field": "moves"})]);
}

function showNodes(nodes, orphans) {
  fillBody(document.getElementById("nodes"), nodes.map((node) => {
    const row = el("tr", null, {"data-node": node.id, "data-alive": node.alive});
    const rate = node.pages_per_min === null ? "?" : node.pages_per_min.toFixed(1);
    const shards = node.shards ? `${node.shard_count}: ${node.shards}` : "-";
    row.append(el("td", node.id), el("td", node.alive ? "alive" : "dead"),
      el("td", age(node.heartbeat_age)), el("td", shards),
      el("td", node.pages === null ? "?" : node.pages, {class: "num"}),
      el("td", rate, {class: "num"}), ...nodeCells(node),
      el("td", node.idle || "", {class: "idle"}));
    return row;
  }));
  // A finished crawl needs no owners (orphans is null): no list then.
  document.getElementById("orphans-line").hidden = orphans === null;
  document.getElementById("orphans").textContent = orphans || "none";
}

function showHosts(id, rows) {
  const table = document.getElementById(id);
  const head = el("tr");
  head.append(el("th", "host"), ...HOST_COLUMNS.map(([title]) => el("th", title, {class: "num"})),
    el("th", "delay", {class: "num"}), el("th", "reason"), el("th", "slow / paused"),
    el("th", "strategy"));
  const body = el("tbody");
  for (const host of rows) {
    const row = el("tr", null, {"data-host": host.host});
    row.append(el("td", host.host, {class: "host"}));
    for (const [, field] of HOST_COLUMNS) row.append(el("td", host[field].toLocaleString("en-US"), {class: "num"}));
    row.append(el("td", host.delay ? `${host.delay}s` : "", {class: "num"}), el("td", host.reason), el("td", host.health),
      el("td", host.strategy || ""));
    body.appendChild(row);
  }
  if (!rows.length) body.appendChild(el("tr")).appendChild(el("td", "none recorded", {colspan: 13}));
  table.replaceChildren(el("thead"), body);
  table.tHead.appendChild(head);
}

function token() {
  const match = /(?:^|&)token=([^&]*)/.exec(window.location.hash.slice(1));
  return match ? decodeURIComponent(match[1]) : null;
}

function showControls(state) {
  const box = document.getElementById("controls");
  if (!state.control) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.hidden = false;
  if (box.childElementCount) return;
  const say = el("span", "", {id: "control-result"});
  for (const action of ["pause", "resume"]) {
    const button = el("button", action === "pause" ? "Pause crawl" : "Resume crawl", {id: action, type: "button"});
    if (!token()) button.disabled = true;
    button.addEventListener("click", async () => {
      const answer = await fetch(`control/${action}`, {method: "POST", headers: {"X-Dashboard-Token": token() || ""}});
      say.textContent = answer.ok ? `${action}d` : `refused (${answer.status})`;
      refresh();
    });
    box.appendChild(button);
  }
  if (!token()) say.textContent = "open the URL printed by scrapy frontier web (with its #token) to pause or resume";
  box.appendChild(say);
}

function show(state) {
  document.getElementById("prefix").textContent = state.prefix;
  const stateNode = document.getElementById("state");
  stateNode.textContent = state.state;
  stateNode.setAttribute("data-state", state.state);
  document.body.setAttribute("data-state", state.state);
  const t = state.totals;
  const totals = {done: t.done, fetched: t.fetched, redirected: t.redirected, failed: t.failed,
    held: t.held, queued: t.queued, "in-flight": t.in_flight, seeds: t.seeds};
  for (const [name, value] of Object.entries(totals)) setNumber(`total-${name}`, value);
  setNumber("rate-cluster", Math.round(state.pages_per_min));
  showProgress(state.progress, state.pages_per_min);
  setNumber("hosts-total", state.hosts.total);
  setNumber("hosts-ready", state.hosts.ready);
  setNumber("hosts-waiting", state.hosts.waiting);
  setNumber("hosts-paused", state.hosts.paused);
  showPace(state.pace);
  showDepths(state.by_depth);
  showFates(t);
  showNodes(state.nodes, state.orphans);
  showHosts("busiest", state.busiest);
  showHosts("failing", state.failing);
  showControls(state);
  const updated = document.getElementById("updated");
  updated.textContent = `updated ${new Date(state.now * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC; ${state.shards} shards`;
  updated.setAttribute("data-now", String(state.now));
  document.getElementById("redis").textContent = state.redis ? `; Redis ${state.redis}` : "";
  refreshMs = Math.max(500, state.refresh * 1000);
}

async function refresh() {
  clearTimeout(timer);
  const error = document.getElementById("error");
  try {
    const answer = await fetch("state.json", {cache: "no-store"});
    if (!answer.ok) throw new Error(`${answer.status} ${(await answer.text()).slice(0, 200)}`);
    show(await answer.json());
    error.hidden = true;
    document.body.setAttribute("data-loaded", "1");
  } catch (problem) {
    error.textContent = `state not read: ${problem.message}`;
    error.hidden = false;
  }
  timer = setTimeout(refresh, refreshMs);
}

refresh();
