#include "server/memory_page.h"

#include <httplib.h>

namespace ebb::server {
namespace {

// The page. Plain ES2017 and SVG, written by hand so that it needs no build step; keep it
// self-contained (the CSP in ServeMemoryPage refuses anything loaded from elsewhere).
constexpr std::string_view kPage = R"ebbpage(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ebb serve: memory</title>
<style>
  :root { --fg: #1d2330; --muted: #6b7280; --line: #e5e7eb; --bg: #f7f8fa; --card: #fff; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; align-items: center; gap: 16px; padding: 8px 16px;
           background: var(--card); border-bottom: 1px solid var(--line); }
  header h1 { font-size: 15px; margin: 0; }
  header .muted { flex: 1; }
  .muted { color: var(--muted); }
  main { padding: 12px 16px; display: grid; gap: 12px;
         grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); }
  section { background: var(--card); border: 1px solid var(--line); border-radius: 6px;
            padding: 10px 12px; }
  section h2 { font-size: 14px; margin: 0 0 6px; display: flex; gap: 8px; align-items: baseline; }
  dl { display: grid; grid-template-columns: repeat(4, auto 1fr); gap: 2px 8px; margin: 0 0 6px; }
  dt { color: var(--muted); white-space: nowrap; }
  dd { margin: 0; font-variant-numeric: tabular-nums; white-space: nowrap; }
  svg { width: 100%; height: 150px; display: block; }
  svg text { font-size: 10px; fill: var(--muted); }
  .legend { display: flex; flex-wrap: wrap; gap: 10px; margin: 2px 0 6px; }
  .legend i { display: inline-block; width: 10px; height: 3px; margin-right: 4px;
              vertical-align: middle; }
  .actions { display: flex; gap: 6px; margin-top: 6px; }
  button { font: inherit; padding: 3px 10px; border: 1px solid #c7ccd4; border-radius: 4px;
           background: #f3f4f6; cursor: pointer; }
  button:hover { background: #e5e7eb; }
  button.danger { color: #b42318; }
  #status.error, #action.error { color: #b42318; }
  #keyform { display: none; gap: 6px; align-items: center; }
  #keyform.shown { display: flex; }
  .empty { color: var(--muted); padding: 8px 0; }
  .device-head { margin: 2px 0 4px; }
  dl.device { grid-template-columns: repeat(3, auto 1fr); }
  .device[hidden], .device-head[hidden] { display: none; }
</style>
</head>
<body>
<header>
  <h1>ebb serve &middot; memory</h1>
  <span class="muted"><span id="version"></span> &middot; up <span id="uptime">-</span>
    &middot; <span id="samples">0</span> samples &middot; <span id="status">starting</span>
    <span id="action"></span></span>
  <form id="keyform">
    <label for="apikey">API key</label>
    <input id="apikey" type="password" autocomplete="off" size="24">
    <button type="submit">Use key</button>
  </form>
  <button id="forgetkey" type="button" title="Remove the key kept in this browser">Forget key</button>
</header>
<main>
  <section id="process">
    <h2>Process <span class="muted" id="limit-note"></span></h2>
    <dl>
      <dt>RSS</dt><dd data-scope="process" data-field="rss_bytes">-</dd>
      <dt>anonymous</dt><dd data-scope="process" data-field="anon_bytes">-</dd>
      <dt>file</dt><dd data-scope="process" data-field="file_bytes">-</dd>
      <dt>peak RSS</dt><dd data-scope="process" data-field="peak_rss_bytes">-</dd>
      <dt>weights</dt><dd data-scope="process" data-field="weights_bytes">-</dd>
      <dt>KV in use</dt><dd data-scope="process" data-field="kv_in_use_bytes">-</dd>
      <dt>KV peak</dt><dd data-scope="process" data-field="kv_peak_bytes">-</dd>
      <dt>budget used</dt><dd data-scope="process" data-field="used_bytes">-</dd>
      <dt>requests/s</dt><dd data-scope="process" data-field="requests_per_s">-</dd>
      <dt>tokens/s</dt><dd data-scope="process" data-field="tokens_per_s">-</dd>
      <dt>running</dt><dd data-scope="process" data-field="running">-</dd>
      <dt>queued</dt><dd data-scope="process" data-field="queued">-</dd>
    </dl>
    <div class="legend" data-legend="process-mem"></div>
    <svg data-chart="process-mem" viewBox="0 0 560 150" preserveAspectRatio="none"></svg>
    <div class="legend" data-legend="process-rate"></div>
    <svg data-chart="process-rate" viewBox="0 0 560 150" preserveAspectRatio="none"></svg>
  </section>
  <div id="models" style="display: contents"></div>
  <section id="unloaded"><h2>Not loaded</h2><div id="unloaded-list" class="muted">-</div></section>
</main>
<script>
'use strict';
const WINDOW_MS = 5 * 60 * 1000;  // the charts' span
const POLL_MS = 1000;
const RATE_SPAN = 5;              // rates over the last 5 samples (smoother than 1 s deltas)
const KEY = 'ebb.apiKey';
const MIB = 1024 * 1024;
const samples = [];               // {t: ms, rt: /v1/runtime}
let nSamples = 0;
let timer = null;
let pollGen = 0;                  // the latest poll; older ones drop their answer
const cards = new Map();          // model id -> section

const COLORS = { rss: '#2563eb', anon: '#16a34a', file: '#d97706', kv_in_use: '#dc2626',
  kv_reserved: '#f59e0b', arena_in_use: '#7c3aed', arena_allocated: '#0891b2',
  weights: '#6b7280', req: '#2563eb', tok: '#16a34a', device_kv: '#be185d',
  device_used: '#0f766e' };

function key() { return localStorage.getItem(KEY) || ''; }

async function api(method, path, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (key()) headers.Authorization = 'Bearer ' + key();
  const r = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined,
                                cache: 'no-store' });
  const text = await r.text();
  let j = null;
  try { j = JSON.parse(text); } catch (e) { j = null; }
  if (r.status === 401) {
    askKey(j && j.error ? j.error.message : 'this service needs an API key');
    throw new Error('401: ' + (j && j.error ? j.error.message : 'unauthorized'));
  }
  if (!r.ok) throw new Error(r.status + ': ' + (j && j.error ? j.error.message : text));
  return j;
}

function status(text, error) {
  const s = document.getElementById('status');
  s.textContent = text;
  s.className = error ? 'error' : '';
}

function askKey(why) {
  document.getElementById('keyform').classList.add('shown');
  status(why, true);
}

function mib(bytes) { return (bytes / MIB).toFixed(1) + ' MiB'; }
function num(x) { return x >= 100 ? x.toFixed(0) : x.toFixed(1); }

// Sets a figure: the text in MiB (or as a number), the raw value in data-value.
function setField(el, value, kind) {
  if (!el) return;
  el.dataset.value = String(value);
  el.textContent = value === null ? '-' : kind === 'bytes' ? mib(value) : kind === 'rate'
    ? num(value) : String(value);
}

// Per-second rate of a cumulative counter over the last RATE_SPAN samples.
function rate(get) {
  if (samples.length < 2) return 0;
  const a = samples[Math.max(0, samples.length - 1 - RATE_SPAN)];
  const b = samples[samples.length - 1];
  const va = get(a.rt), vb = get(b.rt);
  if (va === undefined || vb === undefined || b.t <= a.t) return 0;
  return Math.max(0, (vb - va) * 1000 / (b.t - a.t));
}

function findModel(rt, id) { return rt.models.find((m) => m.id === id); }
function tokens(u) { return u ? u.prompt_tokens + u.generated_tokens : undefined; }
function requests(u) { return u ? u.requests : undefined; }

// Rates at each sample (for the charts), from the sample RATE_SPAN before it.
function rateSeries(get) {
  return samples.map((b, i) => {
    const a = samples[Math.max(0, i - RATE_SPAN)];
    const va = get(a.rt), vb = get(b.rt);
    if (i === 0 || va === undefined || vb === undefined || b.t <= a.t) return null;
    return Math.max(0, (vb - va) * 1000 / (b.t - a.t));
  });
}

// A line chart over the window: series [{name, color, values (per sample, null = gap)}],
// in MiB when bytes, else as numbers.
function chart(svg, legend, series, bytes) {
  const W = 560, H = 150, L = 52, B = 16, T = 6;
  const now = samples.length ? samples[samples.length - 1].t : Date.now();
  // The span grows with the history (at least 30 s) up to the window, so that a page opened a
  // moment ago does not squeeze its samples into the right edge.
  const span = Math.min(WINDOW_MS, Math.max(30000, samples.length ? now - samples[0].t : 0));
  const t0 = now - span;
  let max = 0;
  for (const s of series) for (const v of s.values) if (v !== null && v > max) max = v;
  const unit = bytes ? MIB : 1;
  let top = max / unit;
  const step = Math.pow(10, Math.floor(Math.log10(top || 1)));
  top = Math.max(Math.ceil(top / step) * step, 1);
  const x = (t) => L + (W - L - 4) * (t - t0) / span;
  const y = (v) => T + (H - T - B) * (1 - v / unit / top);
  let out = '';
  for (let k = 0; k <= 4; k++) {
    const v = top * k / 4, yy = T + (H - T - B) * (1 - k / 4);
    out += `<line x1="${L}" x2="${W - 4}" y1="${yy}" y2="${yy}" stroke="#eef0f3"/>`;
    out += `<text x="${L - 4}" y="${yy + 3}" text-anchor="end">${+v.toPrecision(3)}` +
           `${bytes ? ' MiB' : ''}</text>`;
  }
  const tick = span <= 60000 ? 10000 : span <= 150000 ? 30000 : 60000;
  for (let ago = 0; ago < span; ago += tick) {
    const sec = ago / 1000;
    const label = ago === 0 ? 'now' : sec < 60 ? `-${sec}s`
      : `-${Math.floor(sec / 60)}m${sec % 60 ? (sec % 60) + 's' : ''}`;
    out += `<text x="${x(now - ago)}" y="${H - 3}" ` +
           `text-anchor="${ago === 0 ? 'end' : 'middle'}">${label}</text>`;
  }
  for (const s of series) {
    let d = '', pen = false;
    s.values.forEach((v, i) => {
      if (v === null || samples[i].t < t0) { pen = false; return; }
      d += (pen ? 'L' : 'M') + x(samples[i].t).toFixed(1) + ' ' + y(v).toFixed(1);
      pen = true;
    });
    if (d) out += `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`;
  }
  svg.innerHTML = out;
  legend.innerHTML = series.map((s) => `<span><i style="background:${s.color}"></i>` +
                                       `${s.name}</span>`).join('');
}

function modelCard(id) {
  let card = cards.get(id);
  if (card) return card;
  card = document.createElement('section');
  card.dataset.modelCard = id;
  const f = (label, field) => `<dt>${label}</dt><dd data-field="${field}">-</dd>`;
  card.innerHTML = `<h2><span class="name"></span><span class="muted note"></span></h2>
    <dl>${f('weights', 'weights_bytes')}${f('KV in use', 'kv_in_use_bytes')}
      ${f('KV reserved', 'kv_reserved_bytes')}${f('KV peak', 'kv_peak_bytes')}
      ${f('arena in use', 'arena_in_use_bytes')}${f('arena allocated', 'arena_allocated_bytes')}
      ${f('arena peak', 'arena_peak_bytes')}${f('shrinks', 'num_shrinks')}
      ${f('requests/s', 'requests_per_s')}${f('tokens/s', 'tokens_per_s')}
      ${f('running', 'running')}${f('requests', 'requests')}
      ${f('prefix cache', 'prefix_cache_bytes')}${f('pinned', 'prefix_cache_pinned_bytes')}
      ${f('cache hits', 'prefix_cache_hits')}${f('cache misses', 'prefix_cache_misses')}
      ${f('tokens reused', 'prefix_cache_tokens_reused')}</dl>
    <div class="device-head muted" hidden>on the device <span data-field="device">-</span>
      <span data-field="device_adapter">-</span>:</div>
    <dl class="device" hidden>${f('KV in use', 'device_kv_in_use_bytes')}
      ${f('KV peak', 'device_kv_peak_bytes')}${f('retained', 'device_retained_bytes')}
      ${f('weights', 'device_weights_bytes')}${f('used', 'device_used_bytes')}
      ${f('limit', 'device_limit_bytes')}${f('ORT cache', 'device_ort_cache_bytes')}
      ${f('cache mode', 'device_cache_mode')}${f('process (NVML)', 'device_driver_process_bytes')}
      ${f('GPU used', 'device_driver_used_bytes')}${f('GPU total', 'device_driver_total_bytes')}</dl>
    <div class="legend"></div>
    <svg viewBox="0 0 560 150" preserveAspectRatio="none"></svg>
    <div class="actions">
      <button type="button" data-action="shrink_now">Shrink now</button>
      <button type="button" data-action="shrink_after_next_run">Shrink after next run</button>
      <button type="button" data-action="drop_prefix_cache"
              title="Drop the unpinned blocks of this model's prefix cache">Drop prefix cache</button>
      <button type="button" data-action="unload" class="danger">Unload</button>
    </div>`;
  card.querySelector('.name').textContent = id;
  for (const el of card.querySelectorAll('[data-field], [data-action]')) el.dataset.model = id;
  card.querySelector('[data-action="shrink_now"]').onclick = () =>
    act(id, 'shrink now', 'POST', '/runtime/shrink', { when: 'now' });
  card.querySelector('[data-action="shrink_after_next_run"]').onclick = () =>
    act(id, 'shrink after next run', 'POST', '/runtime/shrink', { when: 'after_next_run' });
  card.querySelector('[data-action="drop_prefix_cache"]').onclick = () =>
    act(id, 'drop prefix cache', 'POST', '/prefix/drop', {});
  card.querySelector('[data-action="unload"]').onclick = () =>
    act(id, 'unload', 'POST', '/unload', {});
  document.getElementById('models').appendChild(card);
  cards.set(id, card);
  return card;
}

// Runs a button's request; its outcome stays in #action (polls overwrite #status).
async function act(id, what, method, suffix, body) {
  const out = document.getElementById('action');
  out.className = '';
  out.textContent = what + ' ' + id + '...';
  try {
    await api(method, '/v1/models/' + encodeURIComponent(id) + suffix, body);
    out.textContent = what + ' ' + id + ': done';
  } catch (e) {
    out.textContent = what + ' ' + id + ': ' + e.message;
    out.className = 'error';
  }
  poll();
}

function render() {
  const rt = samples[samples.length - 1].rt;
  // Runtime::Stats() (GET /v1/runtime "stats"): process, memory.limit, what it counts, KV.
  const mem = rt.stats, p = mem.process;
  document.getElementById('version').textContent = 'ebb ' + rt.version;
  document.getElementById('uptime').textContent = Math.round(rt.uptime_s) + ' s';
  document.getElementById('samples').textContent = String(nSamples);
  const pf = (name) => document.querySelector(`[data-scope="process"][data-field="${name}"]`);
  setField(pf('rss_bytes'), p.rss_bytes, 'bytes');
  setField(pf('anon_bytes'), p.anon_bytes, 'bytes');
  setField(pf('file_bytes'), p.file_bytes, 'bytes');
  setField(pf('peak_rss_bytes'), p.peak_rss_bytes, 'bytes');
  setField(pf('weights_bytes'), mem.weights_bytes, 'bytes');
  setField(pf('kv_in_use_bytes'), mem.kv.in_use_bytes, 'bytes');
  setField(pf('kv_peak_bytes'), mem.kv.peak_in_use_bytes, 'bytes');
  setField(pf('used_bytes'), mem.used_bytes, 'bytes');
  setField(pf('requests_per_s'), rate((r) => requests(r.usage)), 'rate');
  setField(pf('tokens_per_s'), rate((r) => tokens(r.usage)), 'rate');
  setField(pf('running'), rt.queue.running);
  setField(pf('queued'), rt.queue.queued);
  document.getElementById('limit-note').textContent =
    mem.limit_bytes ? 'memory.limit ' + mib(mem.limit_bytes) : 'no memory.limit';

  const col = (get) => samples.map((s) => { const v = get(s.rt); return v === undefined ? null : v; });
  chart(document.querySelector('[data-chart="process-mem"]'),
        document.querySelector('[data-legend="process-mem"]'), [
    { name: 'RSS', color: COLORS.rss, values: col((r) => r.stats.process.rss_bytes) },
    { name: 'anonymous', color: COLORS.anon, values: col((r) => r.stats.process.anon_bytes) },
    { name: 'file', color: COLORS.file, values: col((r) => r.stats.process.file_bytes) },
    { name: 'weights', color: COLORS.weights, values: col((r) => r.stats.weights_bytes) },
    { name: 'KV in use', color: COLORS.kv_in_use, values: col((r) => r.stats.kv.in_use_bytes) },
  ], true);
  chart(document.querySelector('[data-chart="process-rate"]'),
        document.querySelector('[data-legend="process-rate"]'), [
    { name: 'requests/s', color: COLORS.req, values: rateSeries((r) => requests(r.usage)) },
    { name: 'tokens/s', color: COLORS.tok, values: rateSeries((r) => tokens(r.usage)) },
  ], false);

  const loaded = rt.models.filter((m) => m.loaded);
  for (const [id, card] of cards) {
    if (!loaded.some((m) => m.id === id)) { card.remove(); cards.delete(id); }
  }
  for (const m of loaded) {
    const card = modelCard(m.id);
    const mf = (name) => card.querySelector(`[data-field="${name}"]`);
    const kv = m.kv || {}, arena = m.cpu_arena || {};
    const arenaOk = arena.available;
    setField(mf('weights_bytes'), m.weights_bytes, 'bytes');
    setField(mf('kv_in_use_bytes'), kv.in_use_bytes, 'bytes');
    setField(mf('kv_reserved_bytes'), kv.reserved_bytes, 'bytes');
    setField(mf('kv_peak_bytes'), kv.peak_in_use_bytes, 'bytes');
    setField(mf('arena_in_use_bytes'), arenaOk ? arena.in_use_bytes : null, 'bytes');
    setField(mf('arena_allocated_bytes'), arenaOk ? arena.total_allocated_bytes : null, 'bytes');
    setField(mf('arena_peak_bytes'), arenaOk ? arena.max_in_use_bytes : null, 'bytes');
    setField(mf('num_shrinks'), m.num_shrinks === undefined ? null : m.num_shrinks);
    setField(mf('requests_per_s'), rate((r) => { const x = findModel(r, m.id);
      return x ? requests(x.usage) : undefined; }), 'rate');
    setField(mf('tokens_per_s'), rate((r) => { const x = findModel(r, m.id);
      return x ? tokens(x.usage) : undefined; }), 'rate');
    setField(mf('running'), m.running);
    setField(mf('requests'), m.usage ? m.usage.requests : 0);
    // The prefix cache (an encoder has none): bytes held over prefix_cache.max_bytes, or "off".
    const pc = m.is_encoder ? null : m.prefix_cache;
    const pcf = mf('prefix_cache_bytes');
    setField(pcf, pc ? pc.bytes : null, 'bytes');
    if (pc) {
      pcf.textContent = pc.max_bytes > 0 ? mib(pc.bytes) + ' / ' + mib(pc.max_bytes)
        : pc.bytes > 0 ? mib(pc.bytes) + ' / off' : 'off';
    }
    setField(mf('prefix_cache_pinned_bytes'), pc ? pc.pinned_bytes : null, 'bytes');
    setField(mf('prefix_cache_hits'), pc ? pc.hits : null);
    setField(mf('prefix_cache_misses'), pc ? pc.misses : null);
    setField(mf('prefix_cache_tokens_reused'), pc ? pc.tokens_reused : null);
    card.querySelector('[data-action="drop_prefix_cache"]').hidden = !pc;
    // The accelerator (ModelSummary::device) of a model whose KV is on a device: its KV there,
    // what gpu_mem_limit counts, ORT's buffer cache and the NVIDIA driver's figures (-1 and ""
    // are not available: "-").
    const dev = m.device && m.device.available ? m.device : null;
    card.querySelector('.device').hidden = !dev;
    card.querySelector('.device-head').hidden = !dev;
    if (dev) {
      const known = (v) => (v === undefined || v < 0 ? null : v);
      setField(mf('device'), dev.device);
      setField(mf('device_adapter'), dev.adapter ? '(' + dev.adapter + ')' : '');
      mf('device_adapter').dataset.value = dev.adapter;
      setField(mf('device_kv_in_use_bytes'), dev.kv.in_use_bytes, 'bytes');
      setField(mf('device_kv_peak_bytes'), dev.kv.peak_in_use_bytes, 'bytes');
      setField(mf('device_retained_bytes'), dev.kv.retained_bytes, 'bytes');
      setField(mf('device_weights_bytes'), dev.weights_bytes, 'bytes');
      setField(mf('device_used_bytes'), dev.used_bytes, 'bytes');
      setField(mf('device_limit_bytes'), dev.limit_bytes, 'bytes');
      if (!dev.limit_bytes) mf('device_limit_bytes').textContent = 'none';
      setField(mf('device_ort_cache_bytes'), known(dev.ort_cache_bytes), 'bytes');
      setField(mf('device_cache_mode'), dev.cache_mode || null);
      setField(mf('device_driver_process_bytes'), known(dev.driver_process_bytes), 'bytes');
      setField(mf('device_driver_used_bytes'), known(dev.driver_used_bytes), 'bytes');
      setField(mf('device_driver_total_bytes'), known(dev.driver_total_bytes), 'bytes');
    }
    const notes = [m.is_encoder ? 'encoder' : m.type, m.pinned ? 'pinned' : ''];
    if (m.expires_at_unix_ms) {
      notes.push('keep-alive ' + Math.max(0, Math.round((m.expires_at_unix_ms - Date.now()) / 1000)) + ' s');
    }
    if (!arenaOk) notes.push('no arena');
    if (dev) notes.push('KV on ' + dev.device);
    card.querySelector('.note').textContent = notes.filter(Boolean).join(' · ');
    const mc = (get) => col((r) => { const x = findModel(r, m.id);
      return x && x.loaded ? get(x) : undefined; });
    const series = [
      { name: 'KV in use', color: COLORS.kv_in_use, values: mc((x) => x.kv.in_use_bytes) },
      { name: 'KV reserved', color: COLORS.kv_reserved, values: mc((x) => x.kv.reserved_bytes) },
      { name: 'weights', color: COLORS.weights, values: mc((x) => x.weights_bytes) },
    ];
    if (dev) {
      const dv = (get) => mc((x) => (x.device && x.device.available ? get(x.device) : undefined));
      series.push({ name: 'device KV in use', color: COLORS.device_kv,
                    values: dv((d) => d.kv.in_use_bytes) });
      series.push({ name: 'device used', color: COLORS.device_used,
                    values: dv((d) => d.used_bytes) });
    }
    if (arenaOk) {
      series.push({ name: 'arena in use', color: COLORS.arena_in_use,
                    values: mc((x) => x.cpu_arena.in_use_bytes) });
      series.push({ name: 'arena allocated', color: COLORS.arena_allocated,
                    values: mc((x) => x.cpu_arena.total_allocated_bytes) });
    }
    chart(card.querySelector('svg'), card.querySelector('.legend'), series, true);
  }
  const rest = rt.models.filter((m) => !m.loaded).map((m) => m.id);
  document.getElementById('unloaded-list').textContent = rest.length ? rest.join(', ') : 'none';
}

// One poll now, then one every POLL_MS (a poll after an action restarts the rhythm).
async function poll() {
  if (timer) { clearTimeout(timer); timer = null; }
  const mine = ++pollGen;
  try {
    const rt = await api('GET', '/v1/runtime');
    if (mine !== pollGen) return;  // a newer poll started meanwhile and owns the rhythm
    const t = Date.now();
    samples.push({ t, rt });
    while (samples.length && samples[0].t < t - WINDOW_MS - POLL_MS) samples.shift();
    nSamples++;
    render();
    status('updated ' + new Date(t).toLocaleTimeString());
  } catch (e) {
    if (mine !== pollGen) return;
    if (String(e.message).startsWith('401')) return;  // askKey showed the form: wait for a key
    status('cannot read /v1/runtime: ' + e.message, true);
  }
  timer = setTimeout(poll, POLL_MS);
}

document.getElementById('keyform').addEventListener('submit', (ev) => {
  ev.preventDefault();
  localStorage.setItem(KEY, document.getElementById('apikey').value.trim());
  document.getElementById('keyform').classList.remove('shown');
  status('key saved');
  poll();
});
document.getElementById('forgetkey').addEventListener('click', () => {
  localStorage.removeItem(KEY);
  status('key forgotten');
  poll();
});
poll();
</script>
</body>
</html>
)ebbpage";

}  // namespace

std::string_view MemoryPageHtml() { return kPage; }

void ServeMemoryPage(const httplib::Request&, httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                 "img-src 'self' data:; connect-src 'self'; form-action 'none'; "
                 "frame-ancestors 'none'; base-uri 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(kPage.data(), kPage.size(), "text/html; charset=utf-8");
}

}  // namespace ebb::server
