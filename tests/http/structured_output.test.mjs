// Structured output and tool calling through the official `openai` npm client against a real
// `ebb serve` (issue 37): the outputs are checked with ajv (Debian's node-ajv), which nobody here
// wrote. The synthesized llama serves with Qwen 2.5's chat template (tool calls in <tool_call>
// blocks), from a copy of its folder made here. Run by ctest (serve_structured_output) with EBB_CLI
// and EBB_TEST_MODELS set.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServe, stopServe } from './serve_helper.mjs';

const EBB = process.env.EBB_CLI;
const MODELS = process.env.EBB_TEST_MODELS;
const HERE = dirname(fileURLToPath(import.meta.url));
// Debian's node-ajv lives in /usr/share/nodejs: ctest sets NODE_PATH to it (NodeSource's node
// does not search it by itself).
const Ajv = createRequire(import.meta.url)('ajv');
const ajv = new Ajv({ format: 'full' });
let server;
let client;
let root;

before(async () => {
  assert.ok(EBB && MODELS, 'EBB_CLI and EBB_TEST_MODELS must be set');
  root = mkdtempSync(join(tmpdir(), 'ebb-tools-'));
  for (const [name, template] of [['tiny-qwen', 'Qwen-Qwen2.5-7B-Instruct.jinja'],
    ['tiny-mistral', 'mistralai-Mistral-7B-Instruct-v0.3.jinja'],
    ['tiny-plain', 'google-gemma-2-2b-it.jinja']]) {
    const dir = join(root, name);
    mkdirSync(dir);
    const src = join(MODELS, 'llama-tiny-fp32');
    for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dir, f));
    copyFileSync(join(HERE, '..', 'template', 'data', template), join(dir, 'chat_template.jinja'));
  }
  let url;
  ({ server, url } = await startServe(EBB, ['--models-dir', root]));
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  await stopServe(server);
  rmSync(root, { recursive: true, force: true });
});

const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 130 },
    born: { type: 'string', format: 'date' },
    pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 3 },
  },
  required: ['name', 'age', 'born', 'pets'],
  additionalProperties: false,
};
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather of a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 16 }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer', minimum: -99, maximum: 99 }, b: { type: 'integer', minimum: -99, maximum: 99 } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
];

test('response_format json_schema (strict) returns JSON that validates, greedy and sampled', async () => {
  for (const temperature of [0, 1.3]) {
    for (let seed = 0; seed < 4; seed++) {
      const r = await client.chat.completions.create({
        model: 'tiny-qwen', messages, temperature, seed, max_tokens: 300,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } },
      });
      assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
      // Properties come in the schema's order (the service keeps the request's key order).
      assert.ok(r.choices[0].message.content.startsWith('{"name":"'), r.choices[0].message.content);
      const value = JSON.parse(r.choices[0].message.content);
      assert.ok(ajv.validate(person, value), `${ajv.errorsText()}: ${r.choices[0].message.content}`);
    }
  }
});

test('response_format json_object returns an object', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny-qwen', messages, max_tokens: 400, response_format: { type: 'json_object' },
  });
  if (r.choices[0].finish_reason === 'stop') {
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(!Array.isArray(v));
  } else {
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.ok(r.choices[0].message.content.startsWith('{'));
  }
});

test('tools with tool_choice required return calls whose arguments validate', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: 'tiny-qwen', messages, tools, tool_choice: 'required', seed, temperature: 1,
      max_tokens: 200,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c.message));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const call of c.message.tool_calls) {
      assert.equal(call.type, 'function');
      assert.match(call.id, /^call_[0-9A-Za-z]{24}$/);
      const tool = tools.find((t) => t.function.name === call.function.name);
      assert.ok(tool, `unknown tool ${call.function.name}`);
      const args = JSON.parse(call.function.arguments);
      assert.ok(ajv.validate(tool.function.parameters, args), `${ajv.errorsText()}: ${call.function.arguments}`);
    }
  }
});

test('a named function is the one called, and streaming assembles the same call', async () => {
  const body = {
    model: 'tiny-qwen', messages, tools, max_tokens: 200, temperature: 0,
    tool_choice: { type: 'function', function: { name: 'add' } },
  };
  const whole = await client.chat.completions.create(body);
  const call = whole.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'add');
  assert.ok(ajv.validate(tools[1].function.parameters, JSON.parse(call.function.arguments)));
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    for (const d of c.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: '', name: '', arguments: '' };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].name += d.function.name;
      if (d.function?.arguments) calls[d.index].arguments += d.function.arguments;
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, whole.choices[0].message.tool_calls.length);
  assert.equal(calls[0].name, call.function.name);
  assert.equal(calls[0].arguments, call.function.arguments);
});

test('a tool result goes back to the model as a tool message', async () => {
  const first = await client.chat.completions.create({
    model: 'tiny-qwen', messages, tools, tool_choice: 'required', max_tokens: 200, temperature: 0,
  });
  const call = first.choices[0].message.tool_calls[0];
  const r = await client.chat.completions.create({
    model: 'tiny-qwen', tools, max_tokens: 8, temperature: 0, tool_choice: 'none',
    messages: [...messages, first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }],
  });
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.tool_calls, undefined);
  // Mistral's template needs its own ids: ebb derives them, and the call still renders.
  const m = await client.chat.completions.create({
    model: 'tiny-mistral', tools, max_tokens: 4, temperature: 0,
    messages: [...messages, first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: '21 degrees' }],
  });
  assert.equal(m.choices[0].message.role, 'assistant');
});

test('an unsupported schema keyword is a 400 that names it', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: 'tiny-qwen', messages,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'integer', multipleOf: 3 } } } } },
    }),
    (e) => e.status === 400 && /multipleOf/.test(e.message) && /\/properties\/a/.test(e.message)
      && e.param === 'response_format.json_schema.schema');
  await assert.rejects(
    client.chat.completions.create({
      model: 'tiny-qwen', messages,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', patternProperties: { x: {} } } } }],
    }),
    (e) => e.status === 400 && /patternProperties/.test(e.message)
      && e.param === 'tools[0].function.parameters');
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny-plain', messages, tools }),
    (e) => e.status === 400 && /renders no tools/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({
      model: 'tiny-qwen', messages, tools, tool_choice: { type: 'function', function: { name: 'nope' } },
    }),
    (e) => e.status === 400 && e.param === 'tool_choice.function.name');
});
