// The dashboard page: plots drawn on canvases by a small inline script that polls /data.json
// every 200 ms. Nothing is loaded from elsewhere (no CDN): the page works without a network.
// Counters are plotted per second when they only grow (task counts), knobs as steps; every
// decision is a numbered marker on every plot, its reason in the legend of its knob's plot.
#include "page.hpp"

namespace grain::dashboard::detail {

const std::string& page_html() {
  static const std::string page = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>grain dashboard</title>
<style>
body{font:13px system-ui,sans-serif;margin:12px;background:#fafafa;color:#222}
h1{font-size:17px;margin:0 0 4px 0}
#status{color:#555;margin-bottom:10px}
#status.ended{color:#a40}
#grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:10px}
.card{background:#fff;border:1px solid #ddd;border-radius:4px;padding:6px 8px}
.card h2{font-size:13px;margin:0;font-weight:600;overflow-wrap:anywhere}
.card .v{float:right;font-variant-numeric:tabular-nums;color:#135}
.card.knob h2{color:#630}
canvas{width:100%;height:170px;display:block}
ol.dec{margin:4px 0 0 0;padding-left:22px;font-size:12px;color:#333}
ol.dec li{overflow-wrap:anywhere}
</style></head>
<body>
<h1 id="title">grain dashboard</h1>
<div id="status">connecting…</div>
<div id="grid"></div>
<script>
"use strict";
const WINDOW_S = 60, POLL_MS = 200, MAX_DEC_LEGEND = 6;
const st = {rows: 0, decisions: 0, cols: [], series: [], last: [], dec: [], info: null,
            ended: false, tmax: 0, samples: 0, cards: []};

function shortName(n) { return n.replace(/\{locality#\d+\/total\}/, ""); }

// Values in readable units: ns as µs/ms/s, big counts with k/M.
function fmt(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const a = Math.abs(v);
  if (v === 0) return unit === "ns" ? "0" : "0" + (unit && unit !== "count" && unit !== "ratio" ? " " + unit : "");
  if (unit === "ns") {
    if (a >= 1e9) return (v / 1e9).toPrecision(3) + " s";
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + " ms";
    if (a >= 1e3) return (v / 1e3).toPrecision(3) + " µs";
    return v.toPrecision(3) + " ns";
  }
  let s;
  if (a >= 1e9) s = (v / 1e9).toPrecision(3) + "G";
  else if (a >= 1e6) s = (v / 1e6).toPrecision(3) + "M";
  else if (a >= 1e4) s = (v / 1e3).toPrecision(3) + "k";
  else if (a === 0 || a >= 0.01) s = Number(v.toPrecision(4)).toString();
  else s = v.toExponential(2);
  return unit && unit !== "count" && unit !== "ratio" ? s + " " + unit : s;
}

function colUnit(c) { return c.rate ? (c.unit === "count" || !c.unit ? "/s" : c.unit + "/s") : c.unit; }

function card(i) {
  const c = st.cols[i];
  const el = document.createElement("div");
  el.className = "card" + (c.knob ? " knob" : "");
  el.dataset.name = c.name;
  const h = document.createElement("h2");
  h.title = c.name;
  h.textContent = (c.knob ? "knob " : "") + shortName(c.name) + (c.rate ? " (per second)" : "");
  const v = document.createElement("span");
  v.className = "v";
  h.appendChild(v);
  const cv = document.createElement("canvas");
  el.appendChild(h);
  el.appendChild(cv);
  let ol = null;
  if (c.knob) { ol = document.createElement("ol"); ol.className = "dec"; el.appendChild(ol); }
  document.getElementById("grid").appendChild(el);
  return {el, v, cv, ol};
}

function merge(j) {
  st.info = j.info;
  st.ended = j.ended;
  while (st.series.length < j.columns.length) {
    st.series.push([]);
    st.last.push(null);
  }
  st.cols = j.columns;
  for (const r of j.rows) {
    st.rows = r[0];
    const t = r[1];
    st.tmax = t;
    st.samples++;
    for (let i = 0; i < st.cols.length; i++) {
      const v = r[2 + i];
      if (v === null || v === undefined) continue;
      if (st.cols[i].rate) {
        const p = st.last[i];
        st.last[i] = [t, v];
        if (p && t > p[0] && v >= p[1]) st.series[i].push([t, (v - p[1]) / (t - p[0])]);
      } else {
        st.series[i].push([t, v]);
      }
    }
  }
  for (const d of j.decisions) {
    st.decisions = d.id;
    st.dec.push(d);
  }
  const from = st.tmax - WINDOW_S;
  for (const s of st.series) {
    let k = 0;
    while (k < s.length && s[k][0] < from) k++;
    if (k) s.splice(0, k);
  }
  while (st.dec.length && st.dec[0].t < from - WINDOW_S) st.dec.shift();
}

// The knob's value as its name for enumerations.
function knobText(c, v) {
  if (c.enum && v !== null && c.enum[Math.round(v)] !== undefined) return c.enum[Math.round(v)];
  return fmt(v, c.unit);
}

function niceTicks(lo, hi, n) {
  const span = hi - lo, step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  let step = mag;
  for (const m of [1, 2, 5, 10]) { if (m * mag >= step0) { step = m * mag; break; } }
  const out = [];
  if (!(step > 0) || !isFinite(step)) return out;
  // By index, and at most 20: x += step stalls where step is below the values' precision.
  for (let k = Math.ceil(lo / step); k * step <= hi + step * 1e-9 && out.length < 20; k++) out.push(k * step);
  return out;
}

function draw(i) {
  const c = st.cols[i], s = st.series[i], k = st.cards[i];
  const cv = k.cv, dpr = window.devicePixelRatio || 1;
  const W = cv.clientWidth || 460, H = cv.clientHeight || 170;
  if (cv.width !== Math.round(W * dpr)) { cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr); }
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, W, H);
  const L = 62, R = 8, T = 6, B = 22, pw = W - L - R, ph = H - T - B;
  const t1 = Math.max(st.tmax, 1e-3), t0 = Math.max(0, t1 - WINDOW_S);
  let lo = Infinity, hi = -Infinity;
  for (const p of s) { if (p[1] < lo) lo = p[1]; if (p[1] > hi) hi = p[1]; }
  if (c.unit === "ratio") { lo = 0; hi = Math.max(1, hi); }
  if (c.enum) { lo = 0; hi = c.enum.length - 1; }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  // Log scale when positive values span more than two decades (a grain size from 10 to 10^6).
  const log = !c.enum && lo > 0 && hi / lo > 100;
  if (!log) { if (hi === lo) { hi += Math.abs(hi) * 0.1 || 1; lo -= Math.abs(lo) * 0.1; } if (lo > 0 && lo < hi * 0.3) lo = 0; }
  const ylo = log ? Math.log10(lo) : lo, yhi = log ? Math.log10(hi) : hi;
  const X = t => L + (t - t0) / (t1 - t0) * pw;
  const Y = v => { const y = log ? Math.log10(v) : v; return T + ph - (y - ylo) / ((yhi - ylo) || 1) * ph; };
  g.font = "11px system-ui,sans-serif";
  g.strokeStyle = "#e4e4e4"; g.fillStyle = "#555"; g.lineWidth = 1;
  g.textAlign = "right"; g.textBaseline = "middle";
  const yt = c.enum ? c.enum.map((_, e) => e) :
             log ? niceTicks(Math.floor(ylo), Math.ceil(yhi), 4).filter(e => Number.isInteger(e)).map(e => Math.pow(10, e))
                 : niceTicks(lo, hi, 4);
  for (const v of yt) {
    const y = Y(v);
    if (y < T - 1 || y > T + ph + 1) continue;
    g.beginPath(); g.moveTo(L, y); g.lineTo(L + pw, y); g.stroke();
    g.fillText(c.enum ? c.enum[v] : fmt(v, colUnit(c)), L - 4, y);
  }
  g.textAlign = "center"; g.textBaseline = "top";
  for (const t of niceTicks(t0, t1, 6)) {
    const x = X(t);
    g.beginPath(); g.moveTo(x, T); g.lineTo(x, T + ph); g.stroke();
    g.fillText(t.toFixed(t1 - t0 < 5 ? 1 : 0) + " s", x, T + ph + 4);
  }
  // Decisions: a numbered marker on every plot, so a change can be set against the counters.
  g.strokeStyle = "rgba(200,60,0,0.55)"; g.fillStyle = "#c83c00"; g.setLineDash([3, 3]);
  for (const d of st.dec) {
    if (d.t < t0) continue;
    const x = X(d.t);
    g.beginPath(); g.moveTo(x, T); g.lineTo(x, T + ph); g.stroke();
    if (c.knob && d.knob === c.name) g.fillText("#" + d.id, x, T);
  }
  g.setLineDash([]);
  g.strokeStyle = c.knob ? "#b05a00" : "#1f5fa8"; g.lineWidth = 1.6;
  g.beginPath();
  let prev = null;
  for (const p of s) {
    if (log && p[1] <= 0) { prev = null; continue; }
    const x = X(p[0]), y = Y(p[1]);
    if (prev === null) g.moveTo(x, y);
    else if (c.knob) { g.lineTo(x, Y(prev[1])); g.lineTo(x, y); }
    else g.lineTo(x, y);
    prev = p;
  }
  g.stroke();
  if (st.ended) {
    g.fillStyle = "#a40"; g.textAlign = "right";
    g.fillText("end of run", L + pw - 2, T + 2);
  }
  const lastv = s.length ? s[s.length - 1][1] : null;
  k.v.textContent = c.knob ? knobText(c, lastv) : fmt(lastv, colUnit(c));
  k.el.dataset.points = String(s.length);
  // Knobs that were changed first, then the counters, then the knobs nobody changed.
  const decided = c.knob && st.dec.some(d => d.knob === c.name);
  k.el.style.order = c.knob ? (decided ? "0" : "2") : "1";
  k.el.dataset.last = lastv === null ? "" : String(lastv);
  if (k.ol) {
    const mine = st.dec.filter(d => d.knob === c.name).slice(-MAX_DEC_LEGEND);
    k.ol.replaceChildren(...mine.map(d => {
      const li = document.createElement("li");
      li.value = d.id;
      li.textContent = `t=${d.t.toFixed(2)} s ${d.rule}: ${knobText(c, d.old)} → ${knobText(c, d.new)}` +
                       (d.clamped ? " (clamped)" : "") + (d.reason ? " — " + d.reason : "");
      return li;
    }));
  }
}

function render() {
  const inf = st.info;
  if (inf) {
    document.getElementById("title").textContent =
        `grain dashboard — ${inf.program}, locality ${inf.locality}, ${inf.workers} workers`;
    document.title = "grain — " + inf.program;
  }
  const s = document.getElementById("status");
  s.textContent = `sample ${st.rows} · t = ${st.tmax.toFixed(2)} s · ${st.dec.length} decisions` +
                  ` · sampled every ${inf ? inf.sample_interval_ms : "?"} ms, shown every ${POLL_MS} ms` +
                  (st.ended ? " · the run has ended" : "");
  s.className = st.ended ? "ended" : "";
  s.dataset.samples = String(st.rows);
  while (st.cards.length < st.cols.length) st.cards.push(card(st.cards.length));
  for (let i = 0; i < st.cols.length; i++) draw(i);
}

async function poll() {
  const began = performance.now();
  try {
    const r = await fetch(`/data.json?rows=${st.rows}&decisions=${st.decisions}`, {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    merge(await r.json());
    render();
  } catch (e) {
    const s = document.getElementById("status");
    s.textContent = `no answer from the program (${e.message}): it has ended or its dashboard stopped`;
    s.className = "ended";
  }
  // Every 200 ms from the start of the last poll, not 200 ms after its end: a slow browser
  // still updates five times a second.
  setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - began)));
}
poll();
</script>
</body></html>
)HTML";
  return page;
}

}  // namespace grain::dashboard::detail
