#!/usr/bin/env node
// Writes the project's own small tokenizer.json files to tests/tokenizer/data/:
//   llama3_style  byte-level BPE, Llama-3 Split regex + ByteLevel, ignore_merges, BOS template
//   qwen2_style   byte-level BPE, NFC + Qwen2 Split regex + ByteLevel, ChatML special tokens
//   roberta_style byte-level BPE, ByteLevel(add_prefix_space), RobertaProcessing, <mask> lstrip
//   mistral_style SentencePiece-style BPE, Metaspace pre-tokenizer, byte_fallback, fuse_unk
//   bert_style    WordPiece, BertNormalizer + BertPreTokenizer, [CLS] $A [SEP]
//   clip_style    BPE with end_of_word_suffix, NFKD/StripAccents/Lowercase/Strip/Replace,
//                 inverted Split + Digits + Punctuation, BPEDecoder, unk_token
//   misc_style    WordLevel, NFKC/Lowercase/Nmt, Whitespace + Split behaviors + Digits +
//                 CharDelimiterSplit + Metaspace(always), CTC/Replace/Strip decoders,
//                 BertProcessing, truncation (Left) and padding (Fixed, Right)
// The vocabularies are trained here by a small deterministic BPE trainer on text that ships
// with Debian (/usr/share/common-licenses, a few /usr/include headers) plus the test strings;
// pre-tokenization for training uses the reference library itself. Run: node make_tokenizers.js
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { commonStrings } = require('./strings.js');

const OUT = path.resolve(__dirname, '../../tests/tokenizer/data');

const LLAMA3_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function corpus() {
  const files = ['/usr/share/common-licenses/GPL-3', '/usr/share/common-licenses/Apache-2.0',
                 '/usr/share/common-licenses/MPL-2.0', '/usr/share/common-licenses/Artistic',
                 '/usr/include/stdio.h', '/usr/include/string.h', '/usr/include/utf8proc.h'];
  let text = '';
  for (const f of files) text += fs.readFileSync(f, 'utf8') + '\n';
  const strings = commonStrings().join('\n');
  for (let i = 0; i < 3; ++i) text += strings + '\n';
  return text;
}

// Splits `text` into words with a reference pre-tokenizer config (and optional normalizer).
function preTokenize(text, preTokenizer, normalizer) {
  const json = {
    version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: normalizer || null, pre_tokenizer: preTokenizer, post_processor: null,
    decoder: null, model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' },
  };
  const tk = Tokenizer.fromString(JSON.stringify(json));
  const counts = new Map();
  for (const line of text.split('\n')) {
    let s = line + '\n';
    if (normalizer) s = tk.getNormalizer().normalizeString(s);
    for (const [w] of tk.getPreTokenizer().preTokenizeString(s)) {
      counts.set(w, (counts.get(w) || 0) + 1);
    }
  }
  return counts;
}

// Classic BPE training: repeatedly merge the most frequent adjacent pair (ties: smallest key).
// `allowed(sym)` says which initial symbols may take part in merges.
function trainBpe(wordCounts, numMerges, allowed) {
  const words = [];
  for (const [w, c] of wordCounts) words.push({ syms: Array.from(w), count: c });
  const SEP = '\u0001';
  const pairCounts = new Map();
  const where = new Map();
  const addWord = (idx, sign) => {
    const { syms, count } = words[idx];
    for (let i = 0; i + 1 < syms.length; ++i) {
      if (!allowed(syms[i]) || !allowed(syms[i + 1])) continue;
      const key = syms[i] + SEP + syms[i + 1];
      pairCounts.set(key, (pairCounts.get(key) || 0) + sign * count);
      if (sign > 0) {
        if (!where.has(key)) where.set(key, new Set());
        where.get(key).add(idx);
      }
    }
  };
  for (let i = 0; i < words.length; ++i) addWord(i, 1);
  const merges = [];
  const merged = new Set();
  while (merges.length < numMerges) {
    let best = null, bestCount = 1;
    for (const [k, c] of pairCounts) {
      if (c > bestCount || (c === bestCount && best !== null && k < best)) {
        best = k;
        bestCount = c;
      }
    }
    if (best === null) break;
    const [a, b] = best.split(SEP);
    merges.push([a, b]);
    merged.add(a + b);
    for (const idx of Array.from(where.get(best) || [])) {
      addWord(idx, -1);
      const syms = words[idx].syms;
      const out = [];
      for (let i = 0; i < syms.length; ++i) {
        if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) {
          out.push(a + b);
          ++i;
        } else {
          out.push(syms[i]);
        }
      }
      words[idx].syms = out;
      addWord(idx, 1);
    }
    for (const [k, c] of pairCounts) if (c <= 0) pairCounts.delete(k);
    pairCounts.delete(best);
  }
  return merges;
}

// Like trainBpe, for words whose last symbol carries `suffix` (end_of_word_suffix models).
function trainBpeSuffix(wordCounts, numMerges, suffix) {
  const words = new Map();
  for (const [w, c] of wordCounts) {
    const syms = Array.from(w);
    syms[syms.length - 1] += suffix;
    words.set(syms.join('\u0002'), c);
  }
  // Re-key so that trainBpe sees arrays: encode each symbol as one private-use character.
  const symToCh = new Map(), chToSym = new Map();
  let next = 0xF0000;
  const enc = new Map();
  for (const [k, c] of words) {
    let t = '';
    for (const sym of k.split('\u0002')) {
      if (!symToCh.has(sym)) {
        const ch = String.fromCodePoint(next++);
        symToCh.set(sym, ch);
        chToSym.set(ch, sym);
      }
      t += symToCh.get(sym);
    }
    enc.set(t, (enc.get(t) || 0) + c);
  }
  const decode = (s) => Array.from(s).map((ch) => chToSym.get(ch)).join('');
  const merges = trainBpe(enc, numMerges, () => true).map(([a, b]) => [decode(a), decode(b)]);
  return { merges, alphabet: Array.from(symToCh.keys()).sort() };
}

function addedToken(id, content, special, extra = {}) {
  return Object.assign({ id, content, single_word: false, lstrip: false, rstrip: false,
                         normalized: !special, special }, extra);
}

function byteLevelVocab(merges, extraWords) {
  const vocab = {};
  let id = 0;
  for (const ch of require('tokenizers').byteLevelAlphabet().sort((x, y) => {
    const bx = ch2byte(x), by = ch2byte(y);
    return bx - by;
  })) vocab[ch] = id++;
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
  for (const w of extraWords) if (!(w in vocab)) vocab[w] = id++;
  return vocab;
}

// GPT-2 bytes_to_unicode inverse for ordering the alphabet by byte value.
function ch2byte(ch) {
  const bs = [];
  for (let b = 33; b <= 126; ++b) bs.push(b);
  for (let b = 161; b <= 172; ++b) bs.push(b);
  for (let b = 174; b <= 255; ++b) bs.push(b);
  const cp = ch.codePointAt(0);
  if (bs.includes(cp)) return cp;
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    if (!bs.includes(b)) {
      if (256 + n === cp) return b;
      ++n;
    }
  }
  return -1;
}

function write(name, json) {
  const text = JSON.stringify(json);
  Tokenizer.fromString(text);  // the reference must accept it
  fs.writeFileSync(path.join(OUT, name), text + '\n');
  console.log(`${name}: ${text.length} bytes`);
}

function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const text = corpus();

  // ---- Byte-level BPE (Llama-3 regex) -------------------------------------------------
  const splitLlama3 = { type: 'Split', pattern: { Regex: LLAMA3_REGEX }, behavior: 'Isolated',
                        invert: false };
  const byteLevelNoRegex = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true,
                             use_regex: false };
  const bl = preTokenize(text, { type: 'Sequence', pretokenizers: [splitLlama3, byteLevelNoRegex] });
  const blMerges = trainBpe(bl, 2000, () => true);
  // Whole words that the merges do not produce: reachable only through ignore_merges.
  const blVocab0 = byteLevelVocab(blMerges, []);
  const extra = Array.from(bl.entries()).filter(([w, c]) => c >= 3 && !(w in blVocab0) &&
                                                            Array.from(w).length >= 4)
                    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
                    .slice(0, 40).map(([w]) => w);
  const blVocab = byteLevelVocab(blMerges, extra);
  const blSize = Object.keys(blVocab).length;
  const mergesJson = blMerges.map(([a, b]) => [a, b]);

  const llamaSpecials = ['<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>',
                         '<|end_header_id|>', '<|eot_id|>', '<|reserved_special_token_0|>'];
  write('llama3_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: llamaSpecials.map((c, i) => addedToken(blSize + i, c, true)),
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [splitLlama3, byteLevelNoRegex] },
    post_processor: {
      type: 'Sequence', processors: [
        { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
        { type: 'TemplateProcessing',
          single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } },
                   { Sequence: { id: 'A', type_id: 0 } }],
          pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } },
                 { Sequence: { id: 'A', type_id: 0 } },
                 { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } },
                 { Sequence: { id: 'B', type_id: 1 } }],
          special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [blSize],
                                                   tokens: ['<|begin_of_text|>'] } } }] },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
             end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
             ignore_merges: true, vocab: blVocab, merges: mergesJson },
  });

  const qwenSpecials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  write('qwen2_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: qwenSpecials.map((c, i) => addedToken(blSize + i, c, true)),
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN2_REGEX }, behavior: 'Isolated', invert: false },
      byteLevelNoRegex] },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false,
                      use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
             end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
             vocab: blVocab, merges: blMerges.map(([a, b]) => a + ' ' + b) },
  });

  write('roberta_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [addedToken(blSize, '<s>', true), addedToken(blSize + 1, '<pad>', true),
                   addedToken(blSize + 2, '</s>', true), addedToken(blSize + 3, '<unk>', true),
                   addedToken(blSize + 4, '<mask>', true, { lstrip: true }),
                   addedToken(blSize + 5, ' hello world', false),
                   addedToken(blSize + 6, 'yes', false, { single_word: true })],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true,
                     use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', blSize + 2], cls: ['<s>', blSize],
                      trim_offsets: true, add_prefix_space: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
             end_of_word_suffix: '', fuse_unk: false, byte_fallback: false,
             vocab: blVocab, merges: blMerges.map(([a, b]) => a + ' ' + b) },
  });

  // ---- SentencePiece-style BPE (Metaspace) ---------------------------------------------
  const meta = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true };
  const sp = preTokenize(text.replace(/\n/g, ' '), meta);
  const charCounts = new Map();
  for (const [w, c] of sp) for (const ch of w) charCounts.set(ch, (charCounts.get(ch) || 0) + c);
  const alphabet = Array.from(charCounts.entries()).filter(([, c]) => c >= 3)
                       .map(([ch]) => ch).sort();
  const alpha = new Set(alphabet);
  const spMerges = trainBpe(sp, 1500, (s) => alpha.has(s) || s.length > 1);
  const spVocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  let id = 3;
  for (let b = 0; b < 256; ++b) {
    spVocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = id++;
  }
  for (const ch of alphabet) if (!(ch in spVocab)) spVocab[ch] = id++;
  for (const [a, b] of spMerges) if (!(a + b in spVocab)) spVocab[a + b] = id++;
  write('mistral_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [addedToken(0, '<unk>', true, { normalized: false }),
                   addedToken(1, '<s>', true, { normalized: false }),
                   addedToken(2, '</s>', true, { normalized: false }),
                   addedToken(id, '[INST]', true, { normalized: false }),
                   addedToken(id + 1, '[/INST]', true, { normalized: false })],
    normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first',
                     split: false },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
             { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [
      { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
      { type: 'ByteFallback' }, { type: 'Fuse' }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
             end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
             vocab: spVocab, merges: spMerges.map(([a, b]) => [a, b]) },
  });

  // ---- WordPiece (BERT uncased) --------------------------------------------------------
  const bertNorm = { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                     strip_accents: null, lowercase: true };
  const wp = preTokenize(text, { type: 'BertPreTokenizer' }, bertNorm);
  const wpVocab = { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, '[MASK]': 4 };
  id = 5;
  const wchars = new Map();
  for (const [w, c] of wp) for (const ch of w) wchars.set(ch, (wchars.get(ch) || 0) + c);
  const wpChars = Array.from(wchars.entries()).filter(([, c]) => c >= 3).map(([ch]) => ch).sort();
  for (const ch of wpChars) wpVocab[ch] = id++;
  for (const ch of wpChars) wpVocab['##' + ch] = id++;
  const byFreq = Array.from(wp.entries()).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
  for (const [w] of byFreq.filter(([w]) => Array.from(w).length >= 2).slice(0, 1200)) {
    if (!(w in wpVocab)) wpVocab[w] = id++;
  }
  const suffixes = new Map(), prefixes = new Map();
  for (const [w, c] of wp) {
    const chars = Array.from(w);
    for (let n = 2; n <= 6 && n < chars.length; ++n) {
      const suf = chars.slice(chars.length - n).join('');
      suffixes.set(suf, (suffixes.get(suf) || 0) + c);
      const pre = chars.slice(0, n + 1).join('');
      prefixes.set(pre, (prefixes.get(pre) || 0) + c);
    }
  }
  const top = (m, n) => Array.from(m.entries())
                            .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, n);
  for (const [s] of top(suffixes, 500)) if (!('##' + s in wpVocab)) wpVocab['##' + s] = id++;
  for (const [p] of top(prefixes, 300)) if (!(p in wpVocab)) wpVocab[p] = id++;
  const wpSpecial = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  write('bert_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: wpSpecial.map((c, i) => addedToken(i, c, true)),
    normalizer: bertNorm,
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
               { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
             { SpecialToken: { id: '[SEP]', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } },
             { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] },
                        '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##',
             max_input_chars_per_word: 100, vocab: wpVocab },
  });

  // ---- BPE with end_of_word_suffix (CLIP-like, without byte-level) ---------------------
  const clipNorm = { type: 'Sequence', normalizers: [
    { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
    { type: 'Strip', strip_left: true, strip_right: true },
    { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }] };
  const clipPre = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" },
      behavior: 'Removed', invert: true },
    { type: 'Digits', individual_digits: true },
    { type: 'Punctuation', behavior: 'MergedWithPrevious' }] };
  const clipWords = preTokenize(text, clipPre, clipNorm);
  const clip = trainBpeSuffix(clipWords, 1200, '</w>');
  const clipVocab = { '<unk>': 0 };
  id = 1;
  const clipChars = new Set();
  for (const [w] of clipWords) for (const ch of w) clipChars.add(ch);
  for (const ch of Array.from(clipChars).sort()) {
    if ((ch.codePointAt(0) % 7) === 3 && ch.codePointAt(0) > 0x2000) continue;  // some unknowns
    clipVocab[ch] = id++;
    clipVocab[ch + '</w>'] = id++;
  }
  const clipMerges = clip.merges.filter(([a, b]) => a in clipVocab || true);
  const usable = [];
  for (const [a, b] of clipMerges) {
    if (!(a in clipVocab) || !(b in clipVocab)) continue;
    if (!(a + b in clipVocab)) clipVocab[a + b] = id++;
    usable.push(a + ' ' + b);
  }
  write('clip_style.tokenizer.json', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [addedToken(0, '<unk>', true, { normalized: false }),
                   addedToken(id, '<|startoftext|>', true, { normalized: true }),
                   addedToken(id + 1, '<|endoftext|>', true, { normalized: false })],
    normalizer: clipNorm,
    pre_tokenizer: clipPre,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|startoftext|>', type_id: 0 } },
               { Sequence: { id: 'A', type_id: 0 } },
               { SpecialToken: { id: '<|endoftext|>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: {
        '<|startoftext|>': { id: '<|startoftext|>', ids: [id], tokens: ['<|startoftext|>'] },
        '<|endoftext|>': { id: '<|endoftext|>', ids: [id + 1], tokens: ['<|endoftext|>'] } } },
    decoder: { type: 'BPEDecoder', suffix: '</w>' },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
             end_of_word_suffix: '</w>', fuse_unk: false, byte_fallback: false,
             vocab: clipVocab, merges: usable },
  });

  // ---- WordLevel with many small components --------------------------------------------
  const miscNorm = { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' },
                                                      { type: 'Nmt' }] };
  const miscPre = { type: 'Sequence', pretokenizers: [
    { type: 'Whitespace' },
    { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithNext', invert: false },
    { type: 'Split', pattern: { Regex: ',|;' }, behavior: 'MergedWithPrevious', invert: false },
    { type: 'Split', pattern: { Regex: '[aeiou]{2}' }, behavior: 'Contiguous', invert: false },
    { type: 'Digits', individual_digits: false },
    { type: 'CharDelimiterSplit', delimiter: '_' },
    { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true }] };
  const misc = preTokenize(text, miscPre, miscNorm);
  const miscVocab = { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3 };
  id = 4;
  for (const [w] of Array.from(misc.entries()).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
                        .slice(0, 1500)) {
    if (!(w in miscVocab)) miscVocab[w] = id++;
  }
  write('misc_style.tokenizer.json', {
    version: '1.0',
    truncation: { direction: 'Left', max_length: 40, strategy: 'LongestFirst', stride: 0 },
    padding: { strategy: { Fixed: 12 }, direction: 'Right', pad_to_multiple_of: 4, pad_id: 0,
               pad_type_id: 0, pad_token: '[PAD]' },
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]'].map((c, i) => addedToken(i, c, true)),
    normalizer: miscNorm,
    pre_tokenizer: miscPre,
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
    decoder: { type: 'Sequence', decoders: [
      { type: 'CTC', pad_token: '[PAD]', word_delimiter_token: '|', cleanup: true },
      { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
      { type: 'Strip', content: ' ', start: 1, stop: 1 }] },
    model: { type: 'WordLevel', vocab: miscVocab, unk_token: '[UNK]' },
  });
}

main();
