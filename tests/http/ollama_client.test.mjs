// The official `ollama` npm client (tests/http/package.json) against a real `ebb serve` on a
// free loopback port (issue 41): generate and chat (streamed and not, greedy text equal to the
// OpenAI routes'), embed, list, ps (its size equal to /v1/runtime's figures), show, version,
// keep_alive 0 unloading and a client keep_alive capped by the admin's, a disconnect freeing
// the KV, the registry routes refused, and the key, browser-origin and model-folder rules on
// /api/*. Run by ctest (serve_ollama_client) with EBB_CLI and EBB_TEST_MODELS set.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ollama } from 'ollama';
import { startServe, stopServe } from './serve_helper.mjs';

const EBB = process.env.EBB_CLI;
const MODELS = process.env.EBB_TEST_MODELS;
const TINY = 'llama-tiny-fp32';
const BERT = 'bert-tiny-fp32';
const KEY = 'k-ollama';
const AUTH = { Authorization: `Bearer ${KEY}` };
let server;
let url;
let ollama;

before(async () => {
  assert.ok(EBB && MODELS, 'EBB_CLI and EBB_TEST_MODELS must be set');
  // The admin's keep-alive is 5 minutes; clients may only shorten it (no
  // --allow-client-keep-alive).
  ({ server, url } = await startServe(EBB, ['--models-dir', MODELS, '--api-key', KEY,
    '--keep-alive', '5m']));
  ollama = new Ollama({ host: url, headers: AUTH });
});

after(async () => {
  await stopServe(server);
});

async function post(path, body, headers = {}) {
  const r = await fetch(url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...AUTH, ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

async function runtime() {
  const r = await fetch(`${url}/v1/runtime`, { headers: AUTH });
  return r.json();
}

async function waitFor(pred, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return pred();
}

const greedy = { temperature: 0, num_predict: 12 };

test('chat, streamed and not, equals /v1/chat/completions (greedy)', async () => {
  const messages = [{ role: 'user', content: 'what is the capital of france' }];
  const openai = await post('/v1/chat/completions', {
    model: TINY, messages, max_tokens: 12, temperature: 0,
  });
  assert.equal(openai.status, 200);
  const want = openai.body.choices[0].message.content;
  const r = await ollama.chat({ model: TINY, messages, options: greedy, stream: false });
  assert.equal(r.message.role, 'assistant');
  assert.equal(r.message.content, want);
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'length');
  assert.equal(r.eval_count, 12);
  assert.equal(r.prompt_eval_count, openai.body.usage.prompt_tokens);
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) {
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k}: ${r[k]}`);
  }
  assert.ok(r.total_duration > 0);
  let text = '';
  let last;
  for await (const part of await ollama.chat({ model: TINY, messages, options: greedy,
    stream: true })) {
    text += part.message.content;
    last = part;
  }
  assert.equal(text, want);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, 12);
});

test('generate, streamed and not, equals the OpenAI routes (templated and raw)', async () => {
  const prompt = 'Once upon a time';
  const chat = await post('/v1/chat/completions', {
    model: TINY, messages: [{ role: 'user', content: prompt }], max_tokens: 12, temperature: 0,
  });
  const r = await ollama.generate({ model: TINY, prompt, options: greedy, stream: false });
  assert.equal(r.response, chat.body.choices[0].message.content);
  const completion = await post('/v1/completions', {
    model: TINY, prompt, max_tokens: 12, temperature: 0,
  });
  const raw = await ollama.generate({ model: TINY, prompt, raw: true, options: greedy,
    stream: false });
  assert.equal(raw.response, completion.body.choices[0].text);
  let text = '';
  for await (const part of await ollama.generate({ model: TINY, prompt, raw: true,
    options: greedy, stream: true })) {
    text += part.response;
  }
  assert.equal(text, raw.response);
});

test('options ebb cannot honour are named in X-Ebb-Ignored-Options; unsupported fields are 400', async () => {
  const r = await post('/api/generate', { model: TINY, prompt: 'hi', stream: false,
    options: { temperature: 0, num_predict: 2, mirostat: 2, num_gpu: 1 } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-ebb-ignored-options'), 'mirostat,num_gpu');
  for (const [field, value] of [['images', ['aGk=']], ['template', '{{x}}']]) {
    const bad = await post('/api/generate', { model: TINY, prompt: 'hi', [field]: value });
    assert.equal(bad.status, 400, field);
    assert.equal(typeof bad.body.error, 'string');
    assert.match(bad.body.error, new RegExp(`'${field}' is not supported`));
  }
  const rawSystem = await post('/api/generate', { model: TINY, prompt: 'hi', raw: true,
    system: 'be brief' });
  assert.equal(rawSystem.status, 400);
  assert.match(rawSystem.body.error, /'system' is not used with raw/);
  // format: "json" or a schema constrains the output (issue 37); an unsupported keyword is named.
  const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'],
    additionalProperties: false };
  const fmt = await ollama.generate({ model: TINY, prompt: 'hi', format: schema,
    options: { temperature: 0, num_predict: 20 } });
  assert.deepEqual(Object.keys(JSON.parse(fmt.response)), ['ok']);
  const badFormat = await post('/api/generate', { model: TINY, prompt: 'hi',
    format: { type: 'object', not: {} } });
  assert.equal(badFormat.status, 400);
  assert.match(badFormat.body.error, /'not'/);
  const tools = await post('/api/chat', { model: TINY, messages: [{ role: 'user', content: 'x' }],
    tools: [{ type: 'function', function: { name: 'f' } }] });
  assert.equal(tools.status, 400);
  assert.match(tools.body.error, /tool calling/);
});

test('embed and the older embeddings route equal /v1/embeddings', async () => {
  const input = ['the cat sat', 'a dog ran'];
  const r = await ollama.embed({ model: BERT, input });
  assert.equal(r.embeddings.length, 2);
  const openai = await post('/v1/embeddings', { model: BERT, input, encoding_format: 'float' });
  for (let i = 0; i < 2; ++i) {
    const a = r.embeddings[i];
    const b = openai.body.data[i].embedding;
    assert.equal(a.length, b.length);
    for (let j = 0; j < a.length; ++j) assert.ok(Math.abs(a[j] - b[j]) < 1e-6);
  }
  const old = await ollama.embeddings({ model: BERT, prompt: 'the cat sat' });
  assert.deepEqual(old.embedding, r.embeddings[0]);
  const wrong = await post('/api/embed', { model: TINY, input: 'x' });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.code, 'wrong_model_kind');
});

test('list, ps, show and version; ps size equals /v1/runtime figures', async () => {
  await ollama.generate({ model: TINY, prompt: 'hi', options: greedy, stream: false });
  const list = await ollama.list();
  const names = list.models.map((m) => m.name);
  assert.ok(names.includes(TINY) && names.includes(BERT), names.join(','));
  assert.ok(list.models.every((m) => m.size > 0 && m.details.format === 'onnx'));
  const ps = await ollama.ps();
  const rt = await runtime();
  const mine = ps.models.find((m) => m.name === TINY);
  assert.ok(mine, 'the tiny model is loaded');
  const entry = rt.models.find((m) => m.id === TINY);
  assert.equal(mine.size, entry.weights_bytes + entry.kv.in_use_bytes);
  assert.equal(mine.size_vram, 0);
  assert.ok(mine.ebb.kv && mine.ebb.weights && mine.ebb.prefix_cache, JSON.stringify(mine.ebb));
  const show = await ollama.show({ model: TINY });
  assert.equal(show.details.family, 'llama');
  assert.deepEqual(show.capabilities, ['completion']);
  assert.ok(show.model_info['ebb.context_length'] > 0);
  const v = await ollama.version();
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

test('a client keep_alive is capped by the admin\'s; keep_alive 0 unloads after the request', async () => {
  await ollama.generate({ model: TINY, prompt: 'hi', options: greedy, keep_alive: '1h',
    stream: false });
  const ps = await ollama.ps();
  const expires = new Date(ps.models.find((m) => m.name === TINY).expires_at).getTime();
  assert.ok(expires - Date.now() <= 5 * 60 * 1000 + 5000, `capped to 5m: ${expires - Date.now()}`);
  await ollama.generate({ model: TINY, prompt: 'hi', options: greedy, keep_alive: 0,
    stream: false });
  assert.ok(await waitFor(async () => !(await ollama.ps()).models.some((m) => m.name === TINY),
    5000), 'unloaded after keep_alive 0');
  // An empty prompt loads (and with keep_alive 0 unloads) without generating, as in Ollama.
  const load = await ollama.generate({ model: TINY, prompt: '', stream: false });
  assert.equal(load.done_reason, 'load');
  assert.ok((await ollama.ps()).models.some((m) => m.name === TINY));
});

test('a client that stops reading mid-stream frees the KV', async () => {
  const stream = await ollama.generate({ model: TINY, prompt: 'Once upon a time', raw: true,
    options: { temperature: 0, num_predict: 400 }, stream: true });
  let parts = 0;
  try {
    for await (const part of stream) {
      assert.equal(part.done, false);
      if (++parts === 3) stream.abort();
    }
  } catch (e) {
    assert.equal(e.name, 'AbortError');
  }
  assert.ok(await waitFor(async () => {
    const m = (await runtime()).models.find((x) => x.id === TINY);
    return m && m.kv.in_use_bytes === 0;
  }, 10000), 'the KV was freed');
});

test('registry routes are refused, naming --models-dir; a name outside the models dir is refused', async () => {
  await assert.rejects(ollama.pull({ model: 'llama3' }), (e) => {
    assert.equal(e.status_code, 400);
    assert.match(e.error, /--models-dir/);
    return true;
  });
  await assert.rejects(ollama.delete({ model: TINY }), (e) => e.status_code === 400);
  for (const model of ['../etc', '/etc', 'no-such-model']) {
    const r = await post('/api/generate', { model, prompt: 'hi' });
    assert.ok(r.status === 400 || r.status === 404, `${model}: ${r.status}`);
    assert.equal(typeof r.body.error, 'string');
  }
});

test('the key, browser-origin and Host rules hold on /api/*', async () => {
  const noKey = new Ollama({ host: url });
  await assert.rejects(noKey.list(), (e) => {
    assert.equal(e.status_code, 401, String(e));
    assert.match(e.error, /API key/);
    return true;
  });
  for (const [method, path] of [['GET', '/api/tags'], ['POST', '/api/generate'],
    ['POST', '/api/chat'], ['GET', '/api/ps']]) {
    const body = method === 'POST' ? JSON.stringify({ model: TINY, prompt: 'x' }) : undefined;
    const evil = await fetch(url + path, { method, body, headers: { ...AUTH,
      'Content-Type': 'application/json', Origin: 'http://attacker.example' } });
    assert.equal(evil.status, 403, `${path} from another origin`);
    const j = await evil.json();
    assert.equal(j.code, 'origin_not_allowed');
    const plain = await fetch(url + path, { method, body, headers: { ...AUTH,
      'Content-Type': 'text/plain' } });
    if (method === 'POST') assert.equal(plain.status, 415, `${path} as text/plain`);
  }
});
