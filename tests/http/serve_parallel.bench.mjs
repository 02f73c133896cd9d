// Concurrent chats through `ebb serve --parallel N` with the official `openai` client (issue 40,
// done-when 3; docs/benchmarks.md "ebb serve --parallel with openai clients"). A benchmark, not a
// unit test: ctest label `bench` (never run by `make test`), and a model big enough for the
// figure to mean something (EBB_BENCH_SERVE_MODEL: a model folder; without it the test is skipped
// with exit code 77).
//
// Rounds alternate one chat alone and N chats at once (different prompts, greedy, streamed,
// `max_completion_tokens` each). Figures per round, from the client's clock:
//   - one chat's decode rate: its tokens after the first / the time from its first to its last;
//   - N chats' aggregate decode rate: the tokens every chat received while all N were decoding
//     (after the last chat's first token, up to the first chat's last token) over that window,
//     as bench/vs_llamacpp.py --streams counts it;
//   - end-to-end: all the tokens over the wall time of the round (prefills included).
// It prints the medians and the ratio aggregate / one chat, and exits 1 when the ratio is below
// EBB_BENCH_SERVE_MIN_RATIO (default 2.5; 0 only reports).
//
//   EBB_BENCH_SERVE_CLI=build/release/src/cli/ebb EBB_BENCH_SERVE_MODEL=/path/to/model \
//     node tests/http/serve_parallel.bench.mjs [--parallel 4] [--tokens 64] [--rounds 3] \
//     [--serve-arg --option --serve-arg decode_batch.max_rows=4]
import { basename, dirname } from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { startServe, stopServe } from './serve_helper.mjs';

const { values: args } = parseArgs({
  options: {
    parallel: { type: 'string', default: '4' },
    tokens: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    'serve-arg': { type: 'string', multiple: true, default: [] },
    json: { type: 'boolean', default: false },
  },
});
const N = Number(args.parallel);
const TOKENS = Number(args.tokens);
const ROUNDS = Number(args.rounds);
for (const [name, v] of [['--parallel', N], ['--tokens', TOKENS], ['--rounds', ROUNDS]]) {
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${name} must be a whole number of at least 1`);
    process.exit(2);
  }
}
// EBB_BENCH_SERVE_CLI (a Release build) wins over EBB_CLI, which ctest sets to its own build's.
const EBB = process.env.EBB_BENCH_SERVE_CLI || process.env.EBB_CLI;
const MODEL = process.env.EBB_BENCH_SERVE_MODEL;
const MIN_RATIO = Number(process.env.EBB_BENCH_SERVE_MIN_RATIO ?? '2.5');
if (!MODEL) {
  console.log('SKIP: set EBB_BENCH_SERVE_MODEL to a model folder (docs/benchmarks.md)');
  process.exit(77);
}
if (!EBB) {
  console.error('EBB_CLI must name the ebb binary');
  process.exit(2);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// One streamed greedy chat; resolves to the client-side arrival time (ms) of each content piece.
async function chat(client, model, i) {
  const times = [];
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: `request ${i}: tell a long story about the number ${i * 7 + 3}` }],
    max_completion_tokens: TOKENS,
    temperature: 0,
    stream: true,
  });
  for await (const part of stream) {
    if (part.choices?.[0]?.delta?.content) times.push(performance.now());
  }
  return times;
}

function decodeRate(times) {
  if (times.length < 2) return 0;
  return (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000);
}

// Tokens all streams received while every stream was decoding, over that window (tok/s).
function aggregateRate(streams) {
  const start = Math.max(...streams.map((t) => t[0]));
  const end = Math.min(...streams.map((t) => t[t.length - 1]));
  if (!(end > start)) return 0;
  let n = 0;
  for (const t of streams) n += t.filter((x) => x > start && x <= end).length;
  return n / ((end - start) / 1000);
}

// The first load of a model builds its compiled-model cache entry in the background, on the same
// two cores the rounds would time: wait until the model's runtime document no longer says
// "building" (stats.weights.cache; docs/memory.md "The first load"), at most 30 minutes.
async function waitForCacheBuild(url, model) {
  const deadline = performance.now() + 30 * 60 * 1000;
  let said = false;
  for (;;) {
    const res = await fetch(`${url}/v1/models/${encodeURIComponent(model)}/runtime`);
    if (!res.ok) throw new Error(`GET /v1/models/${model}/runtime: HTTP ${res.status}`);
    const cache = (await res.json()).stats?.weights?.cache;
    if (cache !== 'building') return;
    if (performance.now() > deadline) throw new Error('the model cache build took over 30 minutes');
    if (!said) console.log('waiting for the model cache entry to be built before timing');
    said = true;
    await new Promise((r) => setTimeout(r, 500));
  }
}

const { server, url } = await startServe(EBB, ['--models-dir', dirname(MODEL), '--parallel',
  String(N), ...args['serve-arg']]);
const model = basename(MODEL);
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 600000 });
const rounds = [];
try {
  await chat(client, model, 0);  // loads the model (and builds its cache entry the first time)
  await waitForCacheBuild(url, model);
  for (let r = 0; r < ROUNDS; ++r) {
    const solo = await chat(client, model, 1000 + r);
    const t0 = performance.now();
    const streams = await Promise.all(Array.from({ length: N }, (_, i) => chat(client, model, r * N + i + 1)));
    const wall = (performance.now() - t0) / 1000;
    const tokens = streams.reduce((a, t) => a + t.length, 0);
    const round = {
      one_chat_decode_tok_s: decodeRate(solo),
      aggregate_decode_tok_s: aggregateRate(streams),
      end_to_end_tok_s: tokens / wall,
      tokens_per_chat: streams.map((t) => t.length),
    };
    round.ratio = round.aggregate_decode_tok_s / round.one_chat_decode_tok_s;
    rounds.push(round);
    console.log(`round ${r + 1}: one chat ${round.one_chat_decode_tok_s.toFixed(2)} tok/s; ${N} chats ` +
      `aggregate ${round.aggregate_decode_tok_s.toFixed(2)} tok/s (${round.ratio.toFixed(2)}x), ` +
      `end to end ${round.end_to_end_tok_s.toFixed(2)} tok/s, tokens per chat ${round.tokens_per_chat.join(',')}`);
  }
} finally {
  await stopServe(server);
}
const summary = {
  parallel: N,
  tokens: TOKENS,
  serve_args: args['serve-arg'],
  one_chat_decode_tok_s: median(rounds.map((r) => r.one_chat_decode_tok_s)),
  aggregate_decode_tok_s: median(rounds.map((r) => r.aggregate_decode_tok_s)),
  end_to_end_tok_s: median(rounds.map((r) => r.end_to_end_tok_s)),
  ratio: median(rounds.map((r) => r.ratio)),
  rounds,
};
console.log(`median: one chat ${summary.one_chat_decode_tok_s.toFixed(2)} tok/s, ${N} chats aggregate ` +
  `${summary.aggregate_decode_tok_s.toFixed(2)} tok/s: ${summary.ratio.toFixed(2)}x (wanted >= ${MIN_RATIO})`);
if (args.json) console.log(JSON.stringify(summary));
process.exit(MIN_RATIO > 0 && summary.ratio < MIN_RATIO ? 1 : 0);
