// The official `openai` npm client (tests/http/package.json) against a real `ebb serve` on a
// free loopback port: chat, streamed chat with usage, completions, models.list() and
// embeddings in the client's default (base64) encoding. Greedy output equals `ebb generate`.
// Run by ctest (serve_openai_client) with EBB_CLI and EBB_TEST_MODELS set.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { startServe, stopServe } from './serve_helper.mjs';

const EBB = process.env.EBB_CLI;
const MODELS = process.env.EBB_TEST_MODELS;
const TINY = 'llama-tiny-fp32';
const BERT = 'bert-tiny-fp32';
let server;
let client;

before(async () => {
  assert.ok(EBB && MODELS, 'EBB_CLI and EBB_TEST_MODELS must be set');
  let url;
  ({ server, url } = await startServe(EBB, ['--models-dir', MODELS, '--api-key', 'k-test']));
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k-test', maxRetries: 0 });
});

after(async () => {
  await stopServe(server);
});

const messages = [{ role: 'user', content: 'what is the capital of france' }];

test('chat completion equals ebb generate (greedy)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ebb-'));
  writeFileSync(join(dir, 'm.json'), JSON.stringify(messages));
  const cli = JSON.parse(execFileSync(EBB, ['generate', join(MODELS, TINY), '--messages',
    join(dir, 'm.json'), '--max-new-tokens', '10', '--json']).toString());
  const r = await client.chat.completions.create({
    model: TINY, messages, max_completion_tokens: 10, temperature: 0,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, cli.completion[0]);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 10);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 10);
});

test('streamed chat completion with include_usage', async () => {
  const whole = await client.chat.completions.create({
    model: TINY, messages, max_tokens: 10, temperature: 0,
  });
  const stream = await client.chat.completions.create({
    model: TINY, messages, max_tokens: 10, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let role = null;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.choices.length > 0) {
      const c = chunk.choices[0];
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.deepEqual(usage, whole.usage);
});

test('completion', async () => {
  const r = await client.completions.create({
    model: TINY, prompt: 'once upon a time', max_tokens: 6, temperature: 0,
  });
  assert.equal(r.object, 'text_completion');
  assert.ok(r.choices[0].text.length > 0);
  assert.equal(r.usage.completion_tokens, 6);
});

test('models.list() and models.retrieve()', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes(TINY) && ids.includes(BERT), ids.join(','));
  const m = await client.models.retrieve(TINY);
  assert.equal(m.id, TINY);
});

test('embeddings in the default (base64) encoding equal the float encoding', async () => {
  const input = ['the quick brown fox', 'hello'];
  const r = await client.embeddings.create({ model: BERT, input });
  assert.equal(r.data.length, 2);
  const v = r.data[0].embedding;  // the client decodes base64 into numbers
  assert.ok(Array.isArray(v) && v.length > 0);
  const f = await client.embeddings.create({ model: BERT, input, encoding_format: 'float' });
  assert.equal(f.data[0].embedding.length, v.length);
  for (let i = 0; i < v.length; i++) assert.ok(Math.abs(v[i] - f.data[0].embedding[i]) < 1e-6);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-4);
  assert.ok(r.usage.prompt_tokens > 0);
});

test('errors arrive as the client\'s typed errors', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(client.chat.completions.create({ model: TINY, messages, n: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'n');
  const bad = new OpenAI({ baseURL: client.baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});
