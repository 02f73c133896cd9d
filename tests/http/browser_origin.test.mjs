// A web page cannot drive `ebb serve` (docs/http_api.md#security-model), shown in a real
// headless Chromium against a real `ebb serve` with no key (the default) on a free loopback port:
// - a page from another origin sends a text/plain fetch (no-cors) and submits a form to the
//   unload endpoint: both get 403 and the model stays loaded; its CORS read of /v1/runtime fails;
// - DNS rebinding (Chromium resolves attacker.test to 127.0.0.1): the page at
//   http://attacker.test:PORT/ gets 403, and so do its requests;
// - the memory page from its own origin loads and its buttons' POSTs work (unload).
// Run by ctest (serve_browser_origin) with EBB_CLI and EBB_TEST_MODELS set.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { startServe, stopServe } from './serve_helper.mjs';

const EBB = process.env.EBB_CLI;
const MODELS = process.env.EBB_TEST_MODELS;
const CHROMIUM = process.env.EBB_CHROMIUM || '/usr/bin/chromium';
const TINY = 'llama-tiny-fp32';
let server;
let url;
let port;
let browser;
let attacker;
let attackerUrl;

async function api(method, path, body) {
  const r = await fetch(url + path, { method, headers: { 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, json: text.startsWith('{') ? JSON.parse(text) : text };
}

async function loaded() {
  const r = await api('GET', '/v1/runtime');
  assert.equal(r.status, 200);
  return r.json.models.find((m) => m.id === TINY).loaded;
}

async function refusals(code) {
  const text = await (await fetch(url + '/metrics')).text();
  const m = text.match(new RegExp(`ebb_http_responses_total\\{route="[^"]*",code="${code}"\\} (\\d+)`, 'g'));
  return (m || []).reduce((n, line) => n + Number(line.split(' ').pop()), 0);
}

before(async () => {
  assert.ok(EBB && MODELS, 'EBB_CLI and EBB_TEST_MODELS must be set');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium`);
  const { chromium } = await import('playwright-core');
  ({ server, url } = await startServe(EBB, ['--models-dir', MODELS]));
  port = Number(url.split(':').pop());
  // The attacker's page, at another origin (another port).
  attacker = createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><body>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="${url}/v1/models/${TINY}/unload" target="sink">
  <input name="force" value="true"></form>
<script>
window.attack = async () => {
  const out = {};
  try {
    await fetch('${url}/v1/models/${TINY}/unload', { method: 'POST', mode: 'no-cors',
      headers: { 'Content-Type': 'text/plain' }, body: '{"force": true}' });
    out.plain = 'sent';
  } catch (e) { out.plain = 'error ' + e; }
  try {
    const r = await fetch('${url}/v1/runtime');
    out.read = 'read ' + r.status;
  } catch (e) { out.read = 'blocked'; }
  document.getElementById('f').submit();
  return out;
};
</script></body>`);
  });
  await new Promise((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${attacker.address().port}/`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
      '--host-resolver-rules=MAP attacker.test 127.0.0.1']});
});

after(async () => {
  if (browser) await browser.close();
  if (attacker) attacker.close();
  await stopServe(server);
});

test('a page at another origin cannot unload a model or read the API', async () => {
  assert.equal((await api('POST', `/v1/models/${TINY}/load`, {})).status, 200);
  const before403 = await refusals(403);
  const page = await browser.newPage();
  const answers = [];
  page.on('response', (r) => { if (r.url().startsWith(url)) answers.push(r.status()); });
  await page.goto(attackerUrl);
  const out = await page.evaluate(() => window.attack());
  assert.equal(out.read, 'blocked', 'no CORS header: the page cannot read the answer');
  await page.waitForTimeout(1000);  // the form post lands in the iframe
  assert.ok(await loaded(), 'the model is still loaded');
  assert.ok(await refusals(403) >= before403 + 3, 'text/plain, the CORS read and the form: 403');
  assert.ok(answers.every((s) => s === 403), `answers seen by the page: ${answers}`);
  await page.close();
});

test('DNS rebinding: a page under another name gets 403 for itself and its requests', async () => {
  const page = await browser.newPage();
  const r = await page.goto(`http://attacker.test:${port}/`);
  assert.equal(r.status(), 403);
  const body = await r.text();
  assert.match(body, /host_not_allowed/);
  const status = await page.evaluate(async () => (await fetch('/v1/runtime')).status);
  assert.equal(status, 403);
  assert.ok(await loaded());
  await page.close();
});

test('the memory page works from its own origin', async () => {
  const page = await browser.newPage();
  await page.goto(url + '/');
  assert.ok(await loaded());
  const unload = page.locator(`[data-model="${TINY}"][data-action="unload"]`);
  await unload.waitFor({ timeout: 15000 });
  page.on('dialog', (d) => d.accept());
  await unload.click();
  for (let i = 0; i < 50 && await loaded(); ++i) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await loaded(), false, 'the page\'s own POST unloaded the model');
  await page.close();
});
