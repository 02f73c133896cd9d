#!/usr/bin/env node
// Generates the expected encode/decode results that tests/tokenizer/reference_test.cpp
// compares against, with Hugging Face's `tokenizers` (the Rust library through its Node
// binding; version pinned in package.json / package-lock.json).
//
//   cd tools/tokref && npm ci && node make_tokenizers.js && node gen.js [SHARED_DIR]
//
// SHARED_DIR defaults to ../../../shared (the external fixtures: gpt2, phi3, whisper).
// Output: tests/tokenizer/data/<family>.expected.json
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { rng, commonStrings, familyStrings, randomText } = require('./strings.js');

const REPO = path.resolve(__dirname, '../..');
const SHARED = path.resolve(process.argv[2] || path.join(REPO, '../shared'));
const DATA = path.join(REPO, 'tests/tokenizer/data');
const VERSION = require('tokenizers/package.json').version;

const FAMILIES = [
  { name: 'gpt2', dir: 'shared', file: 'models/tiny-random-gpt2-fp32/tokenizer.json' },
  { name: 'phi3', dir: 'shared', file: 'models/tokenizers/phi3/tokenizer.json' },
  { name: 'whisper', dir: 'shared', file: 'models/tokenizers/whisper/tokenizer.json' },
  { name: 'llama3', dir: 'data', file: 'llama3_style.tokenizer.json' },
  { name: 'qwen2', dir: 'data', file: 'qwen2_style.tokenizer.json' },
  { name: 'roberta', dir: 'data', file: 'roberta_style.tokenizer.json' },
  { name: 'mistral', dir: 'data', file: 'mistral_style.tokenizer.json' },
  { name: 'bert', dir: 'data', file: 'bert_style.tokenizer.json' },
  { name: 'clip', dir: 'data', file: 'clip_style.tokenizer.json' },
  { name: 'misc', dir: 'data', file: 'misc_style.tokenizer.json' },
];

function addedContents(json) {
  const added = json.added_tokens || [];
  const special = added.filter((t) => t.special).map((t) => t.content);
  const other = added.filter((t) => !t.special).map((t) => t.content);
  const pickSpread = (arr, n) => {
    if (arr.length <= n) return arr;
    const out = [];
    for (let i = 0; i < n; ++i) out.push(arr[Math.floor((i * arr.length) / n)]);
    return out;
  };
  return pickSpread(special, 6).concat(pickSpread(other, 3));
}

async function main() {
  for (const fam of FAMILIES) {
    const file = path.join(fam.dir === 'shared' ? SHARED : DATA, fam.file);
    if (!fs.existsSync(file)) {
      console.log(`skip ${fam.name}: ${file} is absent`);
      continue;
    }
    const text = fs.readFileSync(file, 'utf8');
    const json = JSON.parse(text);
    const tk = Tokenizer.fromString(text);
    const strings = commonStrings().concat(familyStrings(addedContents(json)));
    const encode = [];
    let withPlain = 0;
    const nAdded = (await tk.encode('', null, { addSpecialTokens: true })).getIds().length;
    const contains = (hay, needle) => {
      for (let i = 0; i + needle.length <= hay.length; ++i) {
        let ok = true;
        for (let k = 0; ok && k < needle.length; ++k) ok = hay[i + k] === needle[k];
        if (ok) return true;
      }
      return false;
    };
    for (const s of strings) {
      const e = await tk.encode(s, null, { addSpecialTokens: true });
      const p = await tk.encode(s, null, { addSpecialTokens: false });
      const ids = e.getIds();
      const plain = p.getIds();
      const c = { text: s, ids };
      // The add_special_tokens=false ids are stored for 20 cases and whenever they are not
      // simply `ids` without the post-processor's tokens (truncation, padding); the test
      // checks that relation otherwise.
      if (withPlain < 20 || plain.length + nAdded !== ids.length || !contains(ids, plain)) {
        c.plain = plain;
        ++withPlain;
      }
      const d = await tk.decode(ids, false);
      const ds = await tk.decode(ids, true);
      if (d !== s) c.decoded = d;
      if (ds !== s) c.decoded_skip = ds;
      encode.push(c);
    }
    // Decode cases: random valid ids, and slices of encodings (partial characters, bytes).
    const vocab = tk.getVocab(true);
    const allIds = Object.values(vocab).sort((a, b) => a - b);
    const specialIds = (json.added_tokens || []).map((t) => t.id);
    const r = rng(4242);
    const decode = [];
    for (let i = 0; i < 45; ++i) {
      let ids = [];
      const kind = i % 3;
      if (kind === 0) {
        const n = 1 + Math.floor(r() * 16);
        for (let k = 0; k < n; ++k) ids.push(allIds[Math.floor(r() * allIds.length)]);
      } else if (kind === 1) {
        const e = await tk.encode(randomText(r, 10 + Math.floor(r() * 30)), null,
                                  { addSpecialTokens: false });
        const all = e.getIds();
        const a = Math.floor(r() * all.length);
        const b = a + Math.floor(r() * (all.length - a + 1));
        ids = all.slice(a, b);
      } else {
        const e = await tk.encode(randomText(r, 8), null, { addSpecialTokens: false });
        ids = e.getIds();
        const n = 1 + Math.floor(r() * 3);
        for (let k = 0; k < n && specialIds.length; ++k) {
          ids.splice(Math.floor(r() * (ids.length + 1)), 0,
                     specialIds[Math.floor(r() * specialIds.length)]);
        }
      }
      decode.push({ ids, text: await tk.decode(ids, false), text_skip: await tk.decode(ids, true) });
    }
    const out = {
      family: fam.name,
      tokenizer: `${fam.dir}/${fam.file}`,
      reference: `tokenizers@${VERSION} (npm, Hugging Face tokenizers Rust library)`,
      encode,
      decode,
    };
    const outFile = path.join(DATA, `${fam.name}.expected.json`);
    fs.writeFileSync(outFile, JSON.stringify(out) + '\n');
    console.log(`${fam.name}: ${encode.length} encode + ${decode.length} decode cases, ` +
                `${fs.statSync(outFile).size} bytes`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
