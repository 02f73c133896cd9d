#!/usr/bin/env node
// Single-threaded encode throughput of Hugging Face `tokenizers` on the same corpus as
// bench/tokenizer_bench.cpp (see bench/tokenizer_corpus.h). Run:
//   RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node bench.js [SHARED_DIR]
// Reports MB/s (1e6 bytes of UTF-8 input per second of process CPU time, like Google
// Benchmark's bytes_per_second which uses CPU time; wall time is shown too).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

if (process.env.RAYON_NUM_THREADS !== '1' || process.env.TOKENIZERS_PARALLELISM !== 'false') {
  console.error('set RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false');
  process.exit(2);
}
const REPO = path.resolve(__dirname, '../..');
const SHARED = path.resolve(process.argv[2] || path.join(REPO, '../shared'));
const DATA = path.join(REPO, 'tests/tokenizer/data');
const CORPUS_BYTES = 1 << 20;

function corpus() {
  const list = (dir, ext) => fs.readdirSync(dir)
      .filter((f) => (!ext || path.extname(f) === ext) && fs.statSync(path.join(dir, f)).isFile())
      .sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1))
      .map((f) => path.join(dir, f));
  const files = list('/usr/share/common-licenses', '').concat(list('/usr/include', '.h'));
  const docs = [];
  let total = 0;
  const dec = new TextDecoder('utf-8', { fatal: true });
  for (const f of files) {
    if (total >= CORPUS_BYTES) break;
    const buf = fs.readFileSync(f);
    let text;
    try { text = dec.decode(buf); } catch (e) { continue; }
    if (buf.length === 0) continue;
    total += buf.length;
    docs.push(text);
  }
  return { docs, total };
}

function lines(docs) {
  const out = [];
  for (const d of docs) {
    let start = 0;
    while (start < d.length) {
      const nl = d.indexOf('\n', start);
      const end = nl < 0 ? d.length : nl + 1;
      out.push(d.slice(start, end));
      start = end;
    }
  }
  return out;
}

async function measure(tk, inputs, bytes) {
  let best = null;
  let tokens = 0;
  for (let rep = 0; rep < 5; ++rep) {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const encs = await tk.encodeBatch(inputs, { addSpecialTokens: true });
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(cpu0);
    const cpu = (c.user + c.system) / 1e6;
    tokens = encs.reduce((n, e) => n + e.getLength(), 0);
    if (best === null || cpu < best.cpu) best = { cpu, wall };
  }
  return { mbs: bytes / best.cpu / 1e6, wallMbs: bytes / best.wall / 1e6, tokens };
}

async function main() {
  const { docs, total } = corpus();
  const ls = lines(docs);
  const pick = (rel, fallback) =>
    (fs.existsSync(path.join(SHARED, rel)) ? path.join(SHARED, rel) : path.join(DATA, fallback));
  const fams = [
    ['ByteLevel', pick('models/tiny-random-gpt2-fp32/tokenizer.json', 'llama3_style.tokenizer.json')],
    ['SentencePiece', pick('models/tokenizers/phi3/tokenizer.json', 'mistral_style.tokenizer.json')],
  ];
  console.log(`tokenizers@${require('tokenizers/package.json').version}, corpus ${total} bytes, ` +
              `${docs.length} docs, ${ls.length} lines`);
  for (const [name, file] of fams) {
    const tk = Tokenizer.fromFile(file);
    for (const [mode, inputs] of [['Docs', docs], ['Lines', ls]]) {
      const r = await measure(tk, inputs, total);
      console.log(`HF_Encode${name}${mode}: ${r.mbs.toFixed(2)} MB/s (cpu), ` +
                  `${r.wallMbs.toFixed(2)} MB/s (wall), tokens=${r.tokens} ${file}`);
    }
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
