// The memory page (GET /) in a real headless browser: Debian's chromium driven by playwright-core
// (tests/http/package.json), against a real `ebb serve --api-key` on a free loopback port.
// The page is served without a key, asks for it, then shows the loaded model with KV observed
// non-zero during running streams, RSS and the model's figures matching /v1/runtime, and its
// buttons work: shrink now moves the arena figure down (and num_shrinks up), shrink after next
// run fires after the next request, the prefix cache figures match and Drop prefix cache empties
// it, unload removes the card. A model on a device (ModelSummary::device; no GPU here, so the
// page's /v1/runtime answers are rewritten) shows its device figures, and a CPU model hides them.
// Run by ctest (serve_memory_page) with EBB_CLI and EBB_TEST_MODELS set. Missing chromium or
// playwright-core fails the test with the fix, it never skips. EBB_MEMORY_PAGE_SCREENSHOT=PATH
// saves a 1200x800 screenshot there (docs/img/memory_page.png was made that way).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { startServe, stopServe } from './serve_helper.mjs';

const EBB = process.env.EBB_CLI;
const MODELS = process.env.EBB_TEST_MODELS;
const CHROMIUM = process.env.EBB_CHROMIUM || '/usr/bin/chromium';
const KEY = 'k-page';
const TINY = 'llama-tiny-fp32';
const BERT = 'bert-tiny-fp32';
const MIB = 1024 * 1024;
let server;
let url;
let browser;
let page;
const external = [];  // requests of the page to other origins

async function api(method, path, body, key = KEY) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const r = await fetch(url + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, json: text.startsWith('{') ? JSON.parse(text) : text };
}

async function runtime() {
  const r = await api('GET', '/v1/runtime');
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json;
}

const modelOf = (rt, id) => rt.models.find((m) => m.id === id);

function chat(content, maxTokens, stream = false) {
  return api('POST', '/v1/chat/completions', {
    model: TINY, messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0,
    stream,
  });
}

// A figure as the page shows it: the text (in MiB for bytes) and the raw data-value.
async function field(model, name) {
  const sel = model === null ? `[data-scope="process"][data-field="${name}"]`
    : `[data-model="${model}"][data-field="${name}"]`;
  const el = page.locator(sel);
  const text = await el.textContent();
  const value = Number(await el.getAttribute('data-value'));
  return { text, value };
}

// The page's text for `bytes`, and a check that the text and data-value agree.
function assertMiB(shown, label) {
  const m = shown.text.match(/^(\d+\.\d) MiB$/);
  assert.ok(m, `${label}: '${shown.text}' is not a figure in MiB`);
  assert.ok(Math.abs(Number(m[1]) - shown.value / MIB) <= 0.051,
    `${label}: text ${shown.text} and data-value ${shown.value} disagree`);
  return Number(m[1]) * MIB;
}

async function samples() { return Number(await page.locator('#samples').textContent()); }

// Waits until the page has polled at least `n` more times (its figures are then at least that
// fresh).
async function nextPolls(n = 2) {
  const start = await samples();
  await page.waitForFunction((s) => Number(document.getElementById('samples').textContent) >= s,
    start + n, { timeout: 15000 });
}

before(async () => {
  assert.ok(EBB && MODELS, 'EBB_CLI and EBB_TEST_MODELS must be set');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium ` +
    '(scripts/bootstrap lists it in APT_PACKAGES; apt-get install --no-install-recommends chromium)' +
    ' or point EBB_CHROMIUM at a Chromium binary');
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error('playwright-core is missing from tests/http/node_modules: run scripts/bootstrap ' +
      `(it runs npm ci in tests/http) (${e.message})`);
  }
  // ORT's attention takes its scratch, which grows with the prompt, from the arena: the shrink
  // test needs that growth (ebb's own kernel, cpu_ops, keeps a small scratch of its own).
  ({ server, url } = await startServe(EBB, ['--models-dir', MODELS, '--api-key', KEY,
    '--option', 'cpu_ops=off']));
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  // The page must load nothing from elsewhere (checked by the last test).
  page.on('request', (r) => {
    if (!r.url().startsWith(url)) external.push(r.url());
  });
});

after(async () => {
  if (browser) await browser.close();
  await stopServe(server);
});

test('GET / is served without the key; its API calls need it', async () => {
  const r = await fetch(url + '/');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/html/);
  assert.match(r.headers.get('content-security-policy'), /default-src 'none'/);
  const html = await r.text();
  assert.ok(!/(src|href)="?https?:/.test(html), 'the page references an external resource');
  assert.equal((await api('GET', '/v1/runtime', null, null)).status, 401);
  assert.equal((await api('POST', '/', null, null)).status, 401, 'only GET / is exempt');
});

test('the page asks for the key once and keeps it', async () => {
  const load = await api('POST', `/v1/models/${TINY}/load`, {});
  assert.equal(load.status, 200, JSON.stringify(load.json));
  await page.goto(url + '/');
  await page.locator('#keyform.shown').waitFor({ timeout: 10000 });
  assert.match(await page.locator('#status').textContent(), /API key/);
  await page.fill('#apikey', KEY);
  await page.click('#keyform button[type=submit]');
  await page.locator(`[data-model-card="${TINY}"]`).waitFor({ timeout: 10000 });
  assert.equal(await page.evaluate(() => localStorage.getItem('ebb.apiKey')), KEY);
  // A reload uses the stored key: no form.
  await page.reload();
  await page.locator(`[data-model-card="${TINY}"]`).waitFor({ timeout: 10000 });
  assert.equal(await page.locator('#keyform.shown').count(), 0);
});

test('KV in use shows non-zero while streams run', async () => {
  // Streams back to back until the page (polling every second) has seen KV in use.
  let seen = false;
  const load = (async () => {
    const deadline = Date.now() + 60000;
    while (!seen && Date.now() < deadline) {
      await Promise.all([chat('tell me a long story about a cat', 200, true),
        chat('and another one about a dog', 200, true)]);
    }
  })();
  try {
    await page.waitForFunction((id) => {
      const el = document.querySelector(`[data-model="${id}"][data-field="kv_in_use_bytes"]`);
      return el && Number(el.dataset.value) > 0;
    }, TINY, { timeout: 60000 });
    const kv = await field(TINY, 'kv_in_use_bytes');
    assert.ok(kv.value > 0);
    assertMiB(kv, 'KV in use');
  } finally {
    seen = true;
    await load;
  }
});

test('figures match /v1/runtime', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await chat(`request ${i}: what is the capital of france`, 16);
    assert.equal(r.status, 200, JSON.stringify(r.json));
  }
  await nextPolls(2);
  const rt = await runtime();
  const m = modelOf(rt, TINY);
  // Sampled at different moments: RSS within 10% (at least 16 MiB); the rest is still.
  const rss = await field(null, 'rss_bytes');
  const rssShown = assertMiB(rss, 'RSS');
  assert.ok(rss.value > 0);
  const tol = Math.max(16 * MIB, 0.1 * rt.stats.process.rss_bytes);
  assert.ok(Math.abs(rssShown - rt.stats.process.rss_bytes) <= tol,
    `RSS shown ${rss.text}, /v1/runtime ${(rt.stats.process.rss_bytes / MIB).toFixed(1)} MiB`);
  for (const name of ['anon_bytes', 'file_bytes']) {
    const f = await field(null, name);
    assertMiB(f, name);
    assert.ok(Math.abs(f.value - rt.stats.process[name]) <= tol, `${name}: ${f.text}`);
  }
  const weights = await field(TINY, 'weights_bytes');
  assert.ok(m.weights_bytes > 0);
  assert.equal(weights.value, m.weights_bytes);
  assertMiB(weights, 'weights');
  assert.equal(weights.text, `${(m.weights_bytes / MIB).toFixed(1)} MiB`);
  const kvPeak = await field(TINY, 'kv_peak_bytes');
  assert.ok(kvPeak.value > 0, 'KV peak is non-zero after requests');
  assert.equal(kvPeak.value, m.kv.peak_in_use_bytes);
  assertMiB(kvPeak, 'KV peak');
  const kvReserved = await field(TINY, 'kv_reserved_bytes');
  assert.equal(kvReserved.value, m.kv.reserved_bytes);
  assertMiB(kvReserved, 'KV reserved');
  assert.equal((await field(TINY, 'kv_in_use_bytes')).value, 0, 'no request runs now');
  const arena = await field(TINY, 'arena_allocated_bytes');
  assert.ok(m.cpu_arena.available, 'the model has an arena');
  assert.equal(arena.value, m.cpu_arena.total_allocated_bytes);
  assertMiB(arena, 'arena allocated');
  const requests = await field(TINY, 'requests');
  assert.equal(requests.value, m.usage.requests);
  assert.ok(m.usage.requests >= 5 && m.usage.generated_tokens > 0, JSON.stringify(m.usage));
  assert.equal((await field(null, 'weights_bytes')).value, rt.stats.weights_bytes);
});

test('a model on a device shows its device figures; a CPU model has none', async () => {
  const card = `[data-model-card="${TINY}"]`;
  await page.locator(`${card} dl.device[hidden]`).waitFor({ state: 'attached', timeout: 10000 });
  // ebb::DeviceMemory as docs/runtime.schema.json#/$defs/device_memory names it, given to TINY in
  // every /v1/runtime answer the page reads while the route is set.
  const device = {
    available: true, device: 'webgpu:0', adapter: 'NVIDIA H200 (NVIDIA, discrete)',
    kv: { in_use_bytes: 3 * MIB, retained_bytes: MIB, reserved_bytes: 4 * MIB,
      peak_in_use_bytes: 6 * MIB, max_bytes: 0, retain_limit_bytes: 8 * MIB, num_allocations: 2,
      num_os_maps: 0, num_refusals: 0 },
    weights_bytes: 100 * MIB, ort_cache_bytes: -1, used_bytes: 104 * MIB,
    limit_bytes: 2048 * MIB, cache_mode: 'lazyRelease', driver_process_bytes: 600 * MIB,
    driver_used_bytes: -1, driver_total_bytes: 143771 * MIB,
  };
  await page.route('**/v1/runtime', async (route) => {
    const response = await route.fetch();
    const rt = await response.json();
    const m = modelOf(rt, TINY);
    if (m && m.loaded) m.device = device;
    await route.fulfill({ response, json: rt });
  });
  try {
    await page.locator(`${card} dl.device:not([hidden])`).waitFor({ timeout: 10000 });
    const text = async (name) => page.locator(`[data-model="${TINY}"][data-field="${name}"]`)
      .textContent();
    assert.equal(await text('device'), 'webgpu:0');
    assert.equal(await text('device_adapter'), '(NVIDIA H200 (NVIDIA, discrete))');
    for (const [name, value] of [['device_kv_in_use_bytes', 3 * MIB],
      ['device_kv_peak_bytes', 6 * MIB], ['device_retained_bytes', MIB],
      ['device_weights_bytes', 100 * MIB], ['device_used_bytes', 104 * MIB],
      ['device_limit_bytes', 2048 * MIB], ['device_driver_process_bytes', 600 * MIB],
      ['device_driver_total_bytes', 143771 * MIB]]) {
      const f = await field(TINY, name);
      assert.equal(f.value, value, name);
      assertMiB(f, name);
    }
    // -1: not available, shown as "-".
    assert.equal(await text('device_ort_cache_bytes'), '-');
    assert.equal(await text('device_driver_used_bytes'), '-');
    assert.equal(await text('device_cache_mode'), 'lazyRelease');
    assert.match(await page.locator(`${card} .note`).textContent(), /KV on webgpu:0/);
    assert.match(await page.locator(`${card} .legend`).textContent(), /device KV in use/);
  } finally {
    await page.unroute('**/v1/runtime');
  }
  await page.locator(`${card} dl.device[hidden]`).waitFor({ state: 'attached', timeout: 10000 });
});

test('shrink now moves the arena figure down', async () => {
  // A long prompt grows the arena beyond what one short step needs.
  const long = Array.from({ length: 60 }, (_, i) => `sentence ${i} about rivers and hills`).join('. ');
  const r = await chat(long, 4);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  await nextPolls(2);
  const before = await field(TINY, 'arena_allocated_bytes');
  const shrinks = await field(TINY, 'num_shrinks');
  assert.ok(before.value > 0, 'the arena has grown');
  assert.equal(before.value, modelOf(await runtime(), TINY).cpu_arena.total_allocated_bytes);
  await page.click(`[data-model="${TINY}"][data-action="shrink_now"]`);
  await page.waitForFunction(([id, a, s]) => {
    const f = (n) => Number(document.querySelector(`[data-model="${id}"][data-field="${n}"]`)
      .dataset.value);
    return f('arena_allocated_bytes') < a && f('num_shrinks') > s;
  }, [TINY, before.value, shrinks.value], { timeout: 15000 });
  const after = await field(TINY, 'arena_allocated_bytes');
  assertMiB(after, 'arena allocated after shrink');
  const m = modelOf(await runtime(), TINY);
  assert.equal(m.num_shrinks, shrinks.value + 1);
  assert.ok(m.cpu_arena.total_allocated_bytes < before.value);
  assert.match(await page.locator('#action').textContent(), /shrink now .*: done/);
});

test('shrink after next run fires after the next request', async () => {
  const shrinks = modelOf(await runtime(), TINY).num_shrinks;
  await page.click(`[data-model="${TINY}"][data-action="shrink_after_next_run"]`);
  await page.waitForFunction(() => /after next run .*: done/.test(
    document.getElementById('action').textContent), null, { timeout: 10000 });
  assert.equal(modelOf(await runtime(), TINY).num_shrinks, shrinks, 'not before the next run');
  assert.equal((await chat('hello', 4)).status, 200);
  await page.waitForFunction(([id, s]) => Number(document.querySelector(
    `[data-model="${id}"][data-field="num_shrinks"]`).dataset.value) === s + 1,
  [TINY, shrinks], { timeout: 15000 });
});

test('the prefix cache figures and Drop prefix cache', async () => {
  // Issue 25: the card shows the model's prefix cache (bytes / max, pinned, hits, misses,
  // tokens reused) as /v1/runtime has it, and its button drops the unpinned blocks.
  assert.equal((await field(TINY, 'prefix_cache_bytes')).text, 'off');
  const on = await api('PATCH', `/v1/models/${TINY}/runtime`,
    { run_options: { 'prefix_cache.max_bytes': '8MiB' } });
  assert.equal(on.status, 200, JSON.stringify(on.json));
  const long = Array.from({ length: 20 }, (_, i) => `line ${i} about rivers`).join('. ');
  for (let i = 0; i < 2; i++) assert.equal((await chat(long, 4)).status, 200);
  await page.waitForFunction((id) => Number(document.querySelector(
    `[data-model="${id}"][data-field="prefix_cache_hits"]`).dataset.value) >= 1,
  TINY, { timeout: 15000 });
  await nextPolls(2);
  const pc = modelOf(await runtime(), TINY).prefix_cache;
  assert.equal(pc.hits, 1);
  assert.equal(pc.misses, 1);
  assert.ok(pc.tokens_reused > 0 && pc.bytes > 0, JSON.stringify(pc));
  const bytes = await field(TINY, 'prefix_cache_bytes');
  assert.equal(bytes.value, pc.bytes);
  assert.equal(bytes.text, `${(pc.bytes / MIB).toFixed(1)} MiB / 8.0 MiB`);
  assert.equal((await field(TINY, 'prefix_cache_hits')).value, pc.hits);
  assert.equal((await field(TINY, 'prefix_cache_misses')).value, pc.misses);
  assert.equal((await field(TINY, 'prefix_cache_tokens_reused')).value, pc.tokens_reused);
  assert.equal((await field(TINY, 'prefix_cache_pinned_bytes')).value, 0);
  await page.click(`[data-model="${TINY}"][data-action="drop_prefix_cache"]`);
  await page.waitForFunction((id) => Number(document.querySelector(
    `[data-model="${id}"][data-field="prefix_cache_bytes"]`).dataset.value) === 0,
  TINY, { timeout: 15000 });
  assert.match(await page.locator('#action').textContent(), /drop prefix cache .*: done/);
  assert.equal(modelOf(await runtime(), TINY).prefix_cache.bytes, 0);
  const off = await api('PATCH', `/v1/models/${TINY}/runtime`,
    { run_options: { 'prefix_cache.max_bytes': '0' } });
  assert.equal(off.status, 200, JSON.stringify(off.json));
  await page.waitForFunction((id) => document.querySelector(
    `[data-model="${id}"][data-field="prefix_cache_bytes"]`).textContent === 'off',
  TINY, { timeout: 15000 });
});

test('screenshot', async () => {
  // With a second model loaded and some history in the charts.
  const e = await api('POST', '/v1/embeddings', { model: BERT, input: ['hello there'] });
  assert.equal(e.status, 200, JSON.stringify(e.json));
  for (let i = 0; i < 4; i++) await chat(`story ${i}`, 48);
  await page.locator(`[data-model-card="${BERT}"]`).waitFor({ timeout: 10000 });
  await nextPolls(2);
  const shot = await page.screenshot({ path: process.env.EBB_MEMORY_PAGE_SCREENSHOT || undefined });
  assert.ok(shot.length > 10000, 'a screenshot of a rendered page');
});

test('unload removes the model', async () => {
  await page.click(`[data-model="${BERT}"][data-action="unload"]`);
  await page.locator(`[data-model-card="${BERT}"]`).waitFor({ state: 'detached', timeout: 15000 });
  assert.equal(modelOf(await runtime(), BERT).loaded, false);
  assert.match(await page.locator('#unloaded-list').textContent(), new RegExp(BERT));
  await page.locator(`[data-model-card="${TINY}"]`).waitFor({ timeout: 1000 });
  assert.deepEqual(external, [], 'the page requested other origins');
});
