#!/usr/bin/python3
"""Synthetic onnxruntime-genai model folders with random weights, for ebb's tests and benchmarks.

Usage:
  tools/synth_model.py --family {llama,phi3,qwen2,gpt2,bert} --preset {tiny,small,phi-3.5-mini}
                       [--precision fp32|int4] [--seed S] --out DIR
                       [--layers N] [--hidden N] [--heads N] [--kv-heads N] [--head-size N]
                       [--intermediate N] [--vocab N] [--context-length N]
                       [--rotary-form fused|unfused] [--external-data auto|always|never]
                       [--block-size 16|32|64|128|256]
                       [--tokenizer-tokens N] [--tokenizer TOKENIZER_JSON]
                       [--gguf OUT.gguf [--gguf-type q4_0|f16]]

--tokenizer-tokens N caps the learned tokenizer at N tokens (default min(vocab, 4096); learning a
large WordPiece vocabulary takes a minute). --tokenizer (bert only) uses a given Hugging Face
tokenizer.json (e.g. all-MiniLM-L6-v2's) instead of learning one; its special tokens [PAD], [UNK],
[CLS], [SEP] and [MASK] must be below --vocab.

--gguf OUT.gguf (llama, phi3) also writes the folder's weights as a llama.cpp GGUF (architecture
"llama"; tools/synth_gguf.py says how and what is identical), so that ebb and llama.cpp run the same
function (bench/vs_llamacpp.py). --gguf-type q4_0 (the default for int4; needs int4) shares the
4-bit codes and scales exactly; f16 (the default for fp32) rounds the matmul weights to fp16. With
--gguf, int4 scales are rounded to fp16 before quantizing (a Q4_0 block stores an fp16 scale), and
synth_info.json says "int4_scales": "fp16-rounded"; only then, so that every folder made without
--gguf stays byte-identical to what the same arguments gave before --gguf existed (an int4 folder made with --gguf differs from one
made without it in its scales and codes; fp32 folders do not differ). With a block larger than 32,
each Q4_0 32-block takes the scale of its MatMulNBits block; --block-size 16 cannot be Q4_0.

--block-size N (int4 only; default 128, as Microsoft's CPU int4 Phi-3.5-mini
cpu-int4-awq-block-128-acc-level-4; SCRIPT_VERSION 1 had 32 only) is MatMulNBits' block_size along
K. A K that is not a multiple of it is zero-padded to ceil(K/N) whole blocks, as MatMulNBits defines
n_blocks_per_col, so every preset works at every size (tiny's K = 64 is one padded block at 128).

Needs only Debian's /usr/bin/python3 with python3-onnx (1.12, opset 17) and python3-numpy.

Output folder
-------------
  genai_config.json      onnxruntime-genai config (keys below)
  model.onnx             the graph; weights inline, or in model.onnx.data (external data, every tensor
                         aligned to 4096 bytes so ORT can mmap it) when they exceed 256 MiB
                         (--external-data auto) or always/never on request. Tensors under 1 KiB
                         always stay inline (ORT cannot shape-infer from external constants).
  tokenizer.json         Hugging Face tokenizer: byte-level BPE (decoders) or WordPiece (bert)
  tokenizer_config.json  bos/eos/pad, chat_template (Phi-3 style, decoders only), added_tokens_decoder
  synth_info.json        how the folder was made: script version, family, dims, precision, rotary form,
                         seed, parameter count, special token ids, the greedy "successor" permutation,
                         int4_block_size (int4 only)

Everything is deterministic for a given (arguments, SCRIPT_VERSION): no timestamps, fixed producer
fields, fixed node/initializer order, per-tensor RNG streams seeded from (seed, tensor name).
Same seed => byte-identical files; another seed => other weights (the tokenizer does not depend on
the seed, only on the vocabulary size).

Graph layout per family
-----------------------
llama / phi3 / qwen2 (the style of onnxruntime-genai's model builder, CPU fp32 / int4):
  inputs   input_ids int64 [batch_size, sequence_length]
           attention_mask int64 [batch_size, total_sequence_length]
           position_ids int64 [batch_size, sequence_length]          (unfused rotary form only)
           past_key_values.%d.key / .value float [batch_size, kv_heads, past_sequence_length, head_size]
  outputs  logits float [batch_size, sequence_length, vocab]
           present.%d.key / .value float [batch_size, kv_heads, total_sequence_length, head_size]
  nodes    Gather(model.embed_tokens.weight, input_ids)
           attention_mask -> ReduceSum(axis 1, keepdims 0) -> Sub 1 -> Cast int32 = seqlens_k [batch]
           attention_mask -> Shape -> Gather(1) -> Cast int32 = total_sequence_length (scalar)
           layer 0 input norm: RMSNorm as primitive ops (Pow, ReduceMean, Add, Sqrt, Div, Mul; ORT fuses
             them into SimplifiedLayerNormalization). The builder emits SimplifiedLayerNormalization in
             the default domain, which onnx 1.12's checker rejects (ORT registers it only there).
           later norms: SkipSimplifiedLayerNormalization (com.microsoft), output 3 = residual sum
           attention: llama  q/k/v MatMuls;  qwen2 q/k/v MatMuls + bias Adds;
                      phi3   one packed qkv MatMul (fused rotary: packed query into GQA; unfused: Split)
           rotary: fused   = GroupQueryAttention(do_rotary=1, cos_cache, sin_cache); needs
                             head_size % 16 == 0 on ORT's CPU kernel
                   unfused = RotaryEmbedding (com.microsoft) on Q and K with position_ids, then GQA
                             with do_rotary=0. Default: fused when head_size % 16 == 0.
           GroupQueryAttention (com.microsoft) num_heads, kv_num_heads, scale=1/sqrt(head_size),
             past/present [B, kv_heads, S, head_size]; works with a shared past/present buffer of
             max_length (past_present_share_buffer) and with a growing past (present = past + new).
             Rows of a batch are right-padded; only sum(attention_mask[b]) matters per row.
           MLP (SwiGLU): gate, up MatMuls (phi3: one packed gate_up MatMul + Split), x*Sigmoid(x), Mul,
             down MatMul
           final SkipSimplifiedLayerNormalization, lm_head MatMul -> logits
           int4: every MatMul (incl. lm_head) is MatMulNBits (com.microsoft, bits 4, block_size
             --block-size (128), accuracy_level 4, symmetric: no zero_points input, i.e. zero point
             8), B uint8 [N, nb, block/2] with nb = ceil(K/block) (padding past K: code 8), scales
             float [N * nb]. The embedding stays fp32.
gpt2 (the layout of onnxruntime-genai's tiny-random-gpt2 fixture, combined KV):
  inputs   input_ids, position_ids int32 [batch_size, seq_len], attention_mask int32
           [batch_size, total_seq_len], past_%d float [2, batch_size, heads, past_seq_len, head_size]
  outputs  logits float [batch_size, seq_len, vocab], present_%d [2, batch_size, heads, total_seq_len, head]
  nodes    Gather(wte) + Gather(wpe) -> per layer: LayerNormalization, Attention (com.microsoft,
           unidirectional=1, raw 2D mask, past -> present = concat(past, new)), MatMul + bias, Add,
           LayerNormalization, MatMul, FastGelu (com.microsoft, with bias), MatMul + bias, Add;
           final LayerNormalization, lm_head MatMul (fp32 only)
bert (encoder):
  inputs   input_ids, attention_mask, token_type_ids int64 [batch_size, sequence_length]
  outputs  last_hidden_state float [batch_size, sequence_length, hidden]
  nodes    word + position (Range over sequence_length) + token_type embeddings, LayerNormalization,
           per layer: Attention (com.microsoft, bidirectional, raw 2D mask), MatMul + bias, Add,
           LayerNormalization, MatMul + bias, Gelu (com.microsoft), MatMul + bias, Add,
           LayerNormalization (post-norm, like BERT). fp32 only.

genai_config.json keys
----------------------
decoders (llama, phi3, qwen2): the keys the model builder writes:
  model.{type ("llama"|"phi3"|"qwen2"), bos_token_id, eos_token_id (phi3: a list [<|end|>,
  <|endoftext|>], else <|end|>), pad_token_id, vocab_size, context_length}
  model.decoder.{session_options{log_id, provider_options: []}, filename, head_size, hidden_size,
  num_attention_heads, num_hidden_layers, num_key_value_heads,
  inputs{input_ids, attention_mask, position_ids (unfused only), past_key_names
  "past_key_values.%d.key", past_value_names "past_key_values.%d.value"},
  outputs{logits, present_key_names "present.%d.key", present_value_names "present.%d.value"}}
  search{diversity_penalty, do_sample, early_stopping, length_penalty, max_length (= context_length),
  min_length, no_repeat_ngram_size, num_beams, num_return_sequences, past_present_share_buffer (true),
  repetition_penalty, temperature, top_k, top_p}
gpt2: the fixture's layout: model.{type "gpt2", pad/bos/eos_token_id (<|endoftext|>), vocab_size,
  context_length, decoder{session_options, filename, num_key_value_heads, head_size,
  num_hidden_layers, inputs{past_names "past_%d"}, outputs{present_names "present_%d"}}}, plus
  decoder.{hidden_size, num_attention_heads, inputs.{input_ids, position_ids, attention_mask},
  outputs.logits} and search with past_present_share_buffer false.
bert (ebb's choice; onnxruntime-genai has no encoder-only type): model.{type "bert",
  bos_token_id ([CLS]), eos_token_id ([SEP]), pad_token_id ([PAD]), vocab_size, context_length,
  encoder{session_options, filename, head_size, hidden_size, num_attention_heads,
  num_hidden_layers, inputs{input_ids, attention_mask, token_type_ids},
  outputs{last_hidden_state}}}. No search section.

Weights (so that random models behave: outputs depend on the input, greedy decoding does not
collapse): embeddings N(0,1); q/k/v/gate/up ~ N(0, 1/fan_in); o ~ N(0, 1/fan_in) * 1.5 and
down ~ N(0, 1/fan_in), both times sqrt(2/layers) (attention output as strong as the token at any
depth, so the context matters);
norm gains 1 + U(-0.1, 0.1); the lm_head is a permuted embedding: column j = embed row succ^-1(j)
(scaled to give logit margins of a few units, plus noise), where succ is one random cycle over the
ordinary (non-special) tokens. So each token mainly "predicts" its successor, attention mixes in
the context, greedy decoding walks a long cycle instead of repeating a token, and special tokens
(eos included) are practically never the greedy choice.

Presets (dims are overridable; counts include embedding and lm_head; measured with SCRIPT_VERSION 1)
-----------------------------------------------------------------------------------------------
  tiny          2 layers, hidden 64, 4 heads, 2 kv heads, head 16, intermediate 128, vocab 1024,
                context 2048 (bert 512); fp32, fused rotary. llama/phi3 205,120 params (fp32 0.95 MB,
                int4 0.48 MB), qwen2 205,376, gpt2 362,240 (1.45 MB), bert 198,528 (0.79 MB).
                Generates in ~0.3 s; ORT runs a step in ~1 ms.
  small         12 layers, hidden 768, 12 heads, 4 kv heads, head 64, intermediate 2048, vocab 8192,
                context 2048; llama/phi3 88.1 M params (fp32 353 MB external data, int4 76.9 MB
                inline), qwen2 88.1 M, gpt2 99.2 M (397 MB), bert 91.7 M (367 MB). ~2-3 s each.
  phi-3.5-mini  Phi-3.5-mini-instruct's shape: 32 layers, hidden 3072, 32 heads = kv heads, head 96,
                intermediate 8192, vocab 32064, context 4096; int4 by default, fused rotary.
                3,821,079,552 params. int4 (phi3): model.onnx 165 KB + model.onnx.data 2,722,881,536
                bytes (2.54 GiB); generating took 2 min 47 s - 2 min 55 s wall (nice, 2 shared cores)
                at a peak RSS of ~910 MiB; ORT 1.29 loads it and runs an 8-token prefill in 14.5 s
                wall (load included) at a peak RSS of 3.13 GiB.
The tokenizer has min(vocab, 4096) tokens, learned from a built-in corpus (so tiny's tokenizer
covers the whole vocabulary exactly).
"""

import argparse
import hashlib
import json
import math
import os
import re
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper

SCRIPT_VERSION = "2"  # 2: int4 block size 128 by default (--block-size), K padded to whole blocks
FAMILIES = ("llama", "phi3", "qwen2", "gpt2", "bert")
DECODER_LLAMA_STYLE = ("llama", "phi3", "qwen2")

PRESETS = {
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_size=16, intermediate=128, vocab=1024,
                 context_length=2048, precision="fp32"),
    "small": dict(layers=12, hidden=768, heads=12, kv_heads=4, head_size=64, intermediate=2048, vocab=8192,
                  context_length=2048, precision="fp32"),
    "phi-3.5-mini": dict(layers=32, hidden=3072, heads=32, kv_heads=32, head_size=96, intermediate=8192,
                         vocab=32064, context_length=4096, precision="int4"),
}

INT4_BLOCK_DEFAULT = 128  # MatMulNBits block_size along K (--block-size); Microsoft's published
                          # CPU int4 Phi-3.5-mini is cpu-int4-awq-block-128-acc-level-4
INT4_BLOCK_SIZES = (16, 32, 64, 128, 256)
EPS = 9.999999747378752e-06
EXTERNAL_AUTO_BYTES = 256 << 20
ALIGN = 4096
INLINE_BYTES = 1024  # smaller tensors stay in model.onnx: ORT's shape inference can't read external
                     # data (e.g. ReduceSum axes), and it saves 4 KiB of padding each
TOKENIZER_MAX_VOCAB = 4096
ROPE_THETA = {"llama": 10000.0, "phi3": 10000.0, "qwen2": 1000000.0}

DECODER_SPECIALS = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' and message['content'] %}{{ '<|system|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% elif message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"
)

# --------------------------------------------------------------------------------------------
# Built-in corpus for the tokenizers (written for this script).
# --------------------------------------------------------------------------------------------
CORPUS = """\
The river ran low that summer, and the people of the valley walked down to the water every evening
to see how far the stones had come up. Nobody could remember a drought like it. The old miller said
that his father had seen one, long ago, when the wheel stopped turning for three whole months.
A runtime keeps its memory bounded: it reserves what a request needs, it returns what it no longer
uses, and it reports every byte it holds. When the budget is exhausted, it says so clearly and names
the setting to change. Memory that is freed should go back to the operating system.
Hello world! How are you today? I'm fine, thanks. We'll see what the model says next.
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
def generate(model, prompt, max_length=32):
    tokens = tokenize(prompt)
    for step in range(max_length):
        logits = model.forward(tokens)
        tokens.append(int(argmax(logits[-1])))
    return detokenize(tokens)
for (int i = 0; i < n; ++i) { sum += values[i] * weights[i]; }
if (status != 0) { return error("resource exhausted: 2147483648 bytes requested"); }
The numbers 0 1 2 3 4 5 6 7 8 9 10 11 12 42 100 256 512 1024 2048 4096 65536 3.14159 2.71828.
In the morning the market filled with traders selling apples, pears, plums, cheese, bread and fish.
Children ran between the stalls while their parents argued about prices and the weather.
Mathematics, physics, chemistry and biology are taught in the school at the end of the street.
Questions: what is the capital of France? Paris. What is two plus two? Four. Why is the sky blue?
Because molecules in the air scatter short wavelengths of sunlight more than long ones.
She opened the window, listened to the rain, and decided that the letter could wait until tomorrow.
Attention heads, key value caches, rotary embeddings, layer normalization and matrix multiplication.
Tokens are generated one at a time; each new token depends on every token before it.
JSON: {"model": {"type": "llama", "vocab_size": 1024, "context_length": 2048}}
Email: someone@example.com, URL: https://example.com/path?query=value&other=1
"""

_SYLLABLES = ("ka ri to ne mu sa lo pe di va qui zo fe gra tru ble ston wen mar del ior ath "
              "en un os ex pro con ter min al ic ous ing ed ly er est ment tion").split()


def _pseudo_words(n):
    """Deterministic pseudo-words (own LCG, independent of library versions)."""
    state = 0x2545F491
    words = []
    for _ in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        k = 2 + (state >> 33) % 3
        w = ""
        for _ in range(k):
            state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            w += _SYLLABLES[(state >> 33) % len(_SYLLABLES)]
        words.append(w)
    return words


def corpus_text():
    return CORPUS + " ".join(_pseudo_words(3000)) + "\n"


# --------------------------------------------------------------------------------------------
# Byte-level BPE (GPT-2 style) learned deterministically
# --------------------------------------------------------------------------------------------
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


# Approximation of GPT-2's split regex with Python's re (no \p{L}); good enough to learn merges.
_GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def learn_bpe(text, num_merges):
    import heapq
    b2u = bytes_to_unicode()
    counts = {}
    for piece in _GPT2_SPLIT.findall(text):
        w = tuple(b2u[b] for b in piece.encode("utf-8"))
        counts[w] = counts.get(w, 0) + 1
    words = [list(w) for w in sorted(counts)]
    freqs = [counts[tuple(w)] for w in words]
    pair_count = {}
    pair_where = {}
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] = pair_count.get((a, b), 0) + freqs[i]
            pair_where.setdefault((a, b), set()).add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < num_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -negc or negc == 0:
            continue
        merges.append(pair)
        a, b = pair
        new = a + b
        changed = {}
        for i in sorted(pair_where.get(pair, ())):
            w = words[i]
            f = freqs[i]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= f
                changed[(x, y)] = True
            out = []
            j = 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] = pair_count.get((x, y), 0) + f
                pair_where.setdefault((x, y), set()).add(i)
                changed[(x, y)] = True
        pair_count.pop(pair, None)
        pair_where.pop(pair, None)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
    return merges


def _added_token(tid, content, special=True):
    return {"id": tid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": not special, "special": special}


def make_bpe_tokenizer(vocab_size):
    """Returns (tokenizer.json dict, {special: id}, number of tokens)."""
    n_tokens = min(vocab_size, TOKENIZER_MAX_VOCAB)
    n_merges = n_tokens - 256 - len(DECODER_SPECIALS)
    if n_merges < 0:
        raise SystemExit(f"vocab {vocab_size} too small for a byte-level BPE (needs >= {256 + len(DECODER_SPECIALS)})")
    merges = learn_bpe(corpus_text(), n_merges)
    b2u = bytes_to_unicode()
    vocab = {}
    for b in range(256):
        vocab[b2u[b]] = len(vocab)
    for a, b in merges:
        tok = a + b
        if tok not in vocab:
            vocab[tok] = len(vocab)
    specials = {}
    added = []
    for s in DECODER_SPECIALS:
        specials[s] = len(vocab)
        added.append(_added_token(len(vocab), s))
        vocab[s] = len(vocab)
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }
    return tok, specials, len(vocab)


def load_wordpiece_tokenizer(path, vocab_size):
    """A given HF WordPiece tokenizer.json (copied as is): (dict, {special: id}, number of tokens)."""
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    ids = {}
    for t in tok.get("added_tokens", []):
        if t["content"] in BERT_SPECIALS:
            ids[t["content"]] = t["id"]
    vocab = tok["model"]["vocab"]
    for s in BERT_SPECIALS:
        if s not in ids:
            if s not in vocab:
                raise SystemExit(f"{path}: no token {s}")
            ids[s] = vocab[s]
    n = max(max(vocab.values()), max(ids.values())) + 1
    if n > vocab_size:
        raise SystemExit(f"{path}: {n} tokens do not fit --vocab {vocab_size}")
    return tok, ids, n


def make_wordpiece_tokenizer(vocab_size, max_tokens=TOKENIZER_MAX_VOCAB):
    n_tokens = min(vocab_size, max_tokens)
    vocab = {}
    for s in BERT_SPECIALS:
        vocab[s] = len(vocab)
    chars = [chr(c) for c in range(33, 127)]
    for c in chars:
        vocab[c] = len(vocab)
    for c in chars:
        if c.isalnum():
            vocab["##" + c] = len(vocab)
    if len(vocab) > n_tokens:
        raise SystemExit(f"vocab {vocab_size} too small for the WordPiece tokenizer (needs >= {len(vocab)})")
    # Learn pieces BPE-style on lowercased words, "##" marking continuation.
    counts = {}
    for w in re.findall(r"[a-z0-9]+", corpus_text().lower()):
        counts[w] = counts.get(w, 0) + 1
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    while len(vocab) < n_tokens:
        pairs = {}
        for w, syms in words.items():
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + counts[w]
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        a, b = best
        new = a + (b[2:] if b.startswith("##") else b)
        for w, syms in words.items():
            out, j = [], 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[w] = out
        if new not in vocab:
            vocab[new] = len(vocab)
    ids = {s: vocab[s] for s in BERT_SPECIALS}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_added_token(ids[s], s) for s in BERT_SPECIALS],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [ids["[CLS]"]], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [ids["[SEP]"]], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }
    return tok, ids, len(vocab)


# --------------------------------------------------------------------------------------------
# Deterministic random tensors
# --------------------------------------------------------------------------------------------
def rng_for(seed, name):
    """seed: (int seed, family). One independent stream per (seed, family, tensor name)."""
    s, family = seed
    return np.random.default_rng([s, zlib.crc32(f"{family}:{name}".encode("utf-8"))])


def normal(seed, name, shape, std):
    return (rng_for(seed, name).standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)


def uniform(seed, name, shape, lo, hi):
    return rng_for(seed, name).uniform(lo, hi, size=shape).astype(np.float32)


def successor_permutation(seed, n_vocab, special_ids):
    """One random cycle over the ordinary tokens (Sattolo); special tokens map into the cycle."""
    rng = rng_for(seed, "successor")
    ordinary = [i for i in range(n_vocab) if i not in set(special_ids)]
    order = rng.permutation(np.array(ordinary, dtype=np.int64))
    succ = np.zeros(n_vocab, dtype=np.int64)
    for i in range(len(order)):
        succ[order[i]] = order[(i + 1) % len(order)]
    for s in special_ids:
        succ[s] = order[int(rng.integers(len(order)))]
    return succ


# --------------------------------------------------------------------------------------------
# Graph builder with lazily produced initializers (streamed to disk)
# --------------------------------------------------------------------------------------------
class Init:
    """An initializer whose data is produced on demand. write(sink) calls sink(bytes) in order."""

    def __init__(self, name, dtype, shape, produce):
        self.name, self.dtype, self.shape, self.produce = name, dtype, list(shape), produce

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self._consts = {}

    def node(self, op, inputs, outputs=None, name=None, domain=None, **attrs):
        name = name or f"/{op}_{len(self.nodes)}"
        if outputs is None:
            outputs = [f"{name}/output_0"]
        n = helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs)
        self.nodes.append(n)
        return outputs[0] if len(outputs) == 1 else outputs

    def init(self, name, dtype, shape, produce):
        self.inits.append(Init(name, dtype, shape, produce))
        return name

    def const(self, value, dtype):
        arr = np.array(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            name = f"/model/constants/{arr.dtype.name}/{'x'.join(map(str, arr.shape)) or '0D'}/{'_'.join(str(v) for v in arr.flatten().tolist())}"
            self._consts[key] = self.init(name, arr.dtype, arr.shape, lambda a=arr: a)
        return self._consts[key]


def _np_to_onnx(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


# --------------------------------------------------------------------------------------------
# Weight helpers
# --------------------------------------------------------------------------------------------
def int4_blocks_per_col(k, block):
    """MatMulNBits' n_blocks_per_col: K padded up to a whole number of blocks."""
    return (k + block - 1) // block


def quantize_int4_rows(wt, block=INT4_BLOCK_DEFAULT, fp16_scales=False):
    """wt: [n, K] float32 (rows = output channels). Returns (packed uint8 [n, nb, block/2], scales
    [n, nb]) with nb = ceil(K/block), as MatMulNBits defines them. When K is not a multiple of the
    block, the last block of each row is padded with zeros (code 8: value 0; they do not change the
    block's absmax, so its scale is that of its K % block real weights).
    fp16_scales: round each scale to the nearest fp16 (kept as float32) before quantizing with it,
    so that a Q4_0 block (fp16 d) can hold exactly the same values (--gguf)."""
    n, k = wt.shape
    nb = int4_blocks_per_col(k, block)
    if nb * block != k:
        wt = np.concatenate([wt, np.zeros((n, nb * block - k), dtype=wt.dtype)], axis=1)
    blocks = wt.reshape(n, nb, block)
    amax = np.abs(blocks).max(axis=2)
    scales = (amax / 7.0).astype(np.float32)
    scales[scales == 0] = np.float32(1.0)
    if fp16_scales:
        scales = scales.astype(np.float16).astype(np.float32)
    q = np.rint(blocks / scales[:, :, None])
    np.clip(q, -8, 7, out=q)
    q = (q + 8).astype(np.uint8)
    packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    return packed, scales


class Weights:
    """Builds MatMul / MatMulNBits nodes with weights generated from the seed."""

    ROW_CHUNK = 1024

    def __init__(self, g, seed, precision, fp16_scales=False, block=INT4_BLOCK_DEFAULT):
        self.g, self.seed, self.precision, self.fp16_scales = g, seed, precision, fp16_scales
        self.block = block
        self.n_params = 0

    def matmul(self, name, x, k, n, rows_fn, out=None):
        """rows_fn(n0, n1) -> float32 [n1-n0, k]: rows of W^T (one per output channel)."""
        self.n_params += k * n
        base = name[1:].replace("/", ".")
        outputs = [out] if out else None
        if self.precision == "int4":
            block = self.block
            nb = int4_blocks_per_col(k, block)  # K not a multiple of the block: padded (see above)
            cache = {}

            def quantized(n0, n1):
                key = (n0, n1)
                if key not in cache:
                    cache.clear()
                    cache[key] = quantize_int4_rows(rows_fn(n0, n1), block, self.fp16_scales)
                return cache[key]

            def chunks(part):
                def produce():
                    for n0 in range(0, n, self.ROW_CHUNK):
                        n1 = min(n, n0 + self.ROW_CHUNK)
                        packed, scales = quantized(n0, n1)
                        yield packed if part == 0 else scales.reshape(-1)
                return produce

            qw = self.g.init(base + "NBits.qweight", np.uint8, [n, nb, block // 2], chunks(0))
            sc = self.g.init(base + "NBits.scales", np.float32, [n * nb], chunks(1))
            return self.g.node("MatMulNBits", [x, qw, sc], outputs, name=name + "NBits", domain="com.microsoft",
                               K=k, N=n, bits=4, block_size=block, accuracy_level=4)
        w = self.g.init(base + ".weight", np.float32, [k, n],
                        lambda: np.ascontiguousarray(rows_fn(0, n).T))
        return self.g.node("MatMul", [x, w], outputs, name=name)

    def rand_matmul(self, name, x, k, n, std):
        seed = self.seed
        tag = name

        def rows(n0, n1):
            # one RNG stream per tensor; rows generated in fixed chunks so any n0..n1 is reproducible
            out = []
            for c0 in range(n0 - n0 % self.ROW_CHUNK, n1, self.ROW_CHUNK):
                blk = normal(seed, f"{tag}#{c0}", (min(self.ROW_CHUNK, n - c0), k), std)
                lo, hi = max(n0, c0) - c0, min(n1, c0 + self.ROW_CHUNK) - c0
                out.append(blk[lo:hi])
            return np.concatenate(out) if len(out) > 1 else out[0]

        return self.matmul(name, x, k, n, rows)

    def vector(self, name, n, produce):
        self.n_params += n
        return self.g.init(name, np.float32, [n], produce)


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------
ATTN_OUT_SCALE = 1.5
MLP_OUT_SCALE = 1.0
LM_HEAD_GAIN = 6.0     # logit of the successor token ~ LM_HEAD_GAIN * cos(hidden, embedding)
LM_HEAD_NOISE = 0.5    # relative noise added to the permuted-embedding lm_head
LM_HEAD_SELF = 1.0     # minus this times the token's own embedding: discourages repeating a token


def build_llama_style(cfg, seed, specials):
    fam, H, nh, nkv, hd, I, V, L, ctx = (cfg[k] for k in ("family", "hidden", "heads", "kv_heads", "head_size",
                                                          "intermediate", "vocab", "layers", "context_length"))
    fused = cfg["rotary_form"] == "fused"
    g = Graph()
    W = Weights(g, seed, cfg["precision"], cfg.get("fp16_scales", False), cfg.get("block_size") or INT4_BLOCK_DEFAULT)
    TF = TensorProto.FLOAT
    g.inputs.append(helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    g.inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]))
    if not fused:
        g.inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    g.outputs.append(helper.make_tensor_value_info("logits", TF, ["batch_size", "sequence_length", V]))
    for i in range(L):
        for kv in ("key", "value"):
            g.inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", TF, ["batch_size", nkv, "past_sequence_length", hd]))
            g.outputs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", TF, ["batch_size", nkv, "total_sequence_length", hd]))

    # embedding
    embed_cache = {}

    def embed():
        if "e" not in embed_cache:
            embed_cache["e"] = normal(seed, "model.embed_tokens.weight", (V, H), 1.0)
        return embed_cache["e"]

    emb_w = W.g.init("model.embed_tokens.weight", np.float32, [V, H], embed)
    W.n_params += V * H
    x = g.node("Gather", [emb_w, "input_ids"], name="/model/embed_tokens/Gather")

    # attention mask -> seqlens_k, total_sequence_length
    mb = "/model/attn_mask_reformat/attn_mask_subgraph"
    rs = g.node("ReduceSum", ["attention_mask", g.const([1], np.int64)], name=f"{mb}/ReduceSum", keepdims=0)
    sub = g.node("Sub", [rs, g.const(1, np.int64)], name=f"{mb}/Sub")
    seqlens_k = g.node("Cast", [sub], name=f"{mb}/Sub/Cast", to=TensorProto.INT32)
    shp = g.node("Shape", ["attention_mask"], name=f"{mb}/Shape")
    gat = g.node("Gather", [shp, g.const(1, np.int64)], name=f"{mb}/Gather", axis=0)
    total_len = g.node("Cast", [gat], name=f"{mb}/Gather/Cast", to=TensorProto.INT32)

    # rotary caches [ctx, hd/2]
    theta = ROPE_THETA[fam]
    inv_freq = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.int64).astype(np.float32) / hd))
    t = np.arange(ctx, dtype=np.int64).astype(np.float32)
    freqs = np.outer(t, inv_freq).astype(np.float32)
    cos_c = g.init("cos_cache", np.float32, [ctx, hd // 2], lambda: np.cos(freqs).astype(np.float32))
    sin_c = g.init("sin_cache", np.float32, [ctx, hd // 2], lambda: np.sin(freqs).astype(np.float32))

    def gain(name):
        return W.vector(name, H, lambda: 1.0 + uniform(seed, name, (H,), -0.1, 0.1))

    # layer 0 input norm as primitive ops (see module doc)
    ln = "/model/layers.0/input_layernorm"
    w0 = gain("model.layers.0.input_layernorm.weight")
    p = g.node("Pow", [x, g.const(2.0, np.float32)], name=f"{ln}/Pow")
    m = g.node("ReduceMean", [p], name=f"{ln}/ReduceMean", axes=[-1], keepdims=1)
    a = g.node("Add", [m, g.const(EPS, np.float32)], name=f"{ln}/Add")
    s = g.node("Sqrt", [a], name=f"{ln}/Sqrt")
    d = g.node("Div", [x, s], name=f"{ln}/Div")
    h = g.node("Mul", [d, w0], name=f"{ln}/Mul")
    residual = x

    std_in = 1.0 / math.sqrt(H)
    qsz, kvsz = nh * hd, nkv * hd
    for i in range(L):
        pre = f"/model/layers.{i}"
        # --- attention
        if fam == "phi3":
            qkv = W.rand_matmul(f"{pre}/attn/qkv_proj/MatMul", h, H, qsz + 2 * kvsz, std_in)
            if fused:
                q_in, k_in, v_in = qkv, "", ""
            else:
                q_in, k_in, v_in = g.node("Split", [qkv, g.const([qsz, kvsz, kvsz], np.int64)],
                                          [f"{pre}/attn/qkv_proj/Split/output_{j}" for j in range(3)],
                                          name=f"{pre}/attn/qkv_proj/Split", axis=-1)
        else:
            q_in = W.rand_matmul(f"{pre}/attn/q_proj/MatMul", h, H, qsz, std_in)
            k_in = W.rand_matmul(f"{pre}/attn/k_proj/MatMul", h, H, kvsz, std_in)
            v_in = W.rand_matmul(f"{pre}/attn/v_proj/MatMul", h, H, kvsz, std_in)
            if fam == "qwen2":
                for nm, n_ in (("q_proj", qsz), ("k_proj", kvsz), ("v_proj", kvsz)):
                    bname = f"model.layers.{i}.attn.{nm}.Add.bias"
                    b = W.vector(bname, n_, lambda bname=bname, n_=n_: normal(seed, bname, (n_,), 0.1))
                    res = g.node("Add", [{"q_proj": q_in, "k_proj": k_in, "v_proj": v_in}[nm], b], name=f"{pre}/attn/{nm}/Add")
                    if nm == "q_proj":
                        q_in = res
                    elif nm == "k_proj":
                        k_in = res
                    else:
                        v_in = res
        if not fused:
            q_in = g.node("RotaryEmbedding", [q_in, "position_ids", cos_c, sin_c], name=f"{pre}/attn/q_rotary/RotaryEmbedding",
                          domain="com.microsoft", interleaved=0, num_heads=nh)
            k_in = g.node("RotaryEmbedding", [k_in, "position_ids", cos_c, sin_c], name=f"{pre}/attn/k_rotary/RotaryEmbedding",
                          domain="com.microsoft", interleaved=0, num_heads=nkv)
        gqa_inputs = [q_in, k_in, v_in, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total_len]
        if fused:
            gqa_inputs += [cos_c, sin_c]
        attn = g.node("GroupQueryAttention", gqa_inputs,
                      [f"{pre}/attn/GroupQueryAttention/output_0", f"present.{i}.key", f"present.{i}.value"],
                      name=f"{pre}/attn/GroupQueryAttention", domain="com.microsoft",
                      num_heads=nh, kv_num_heads=nkv, scale=float(1.0 / math.sqrt(hd)),
                      do_rotary=1 if fused else 0, rotary_interleaved=0)[0]
        o = W.rand_matmul(f"{pre}/attn/o_proj/MatMul", attn, qsz, H, depth_scale(L) * ATTN_OUT_SCALE / math.sqrt(qsz))
        # --- post attention norm
        wpa = gain(f"model.layers.{i}.post_attention_layernorm.weight")
        outs = g.node("SkipSimplifiedLayerNormalization", [residual, o, wpa],
                      [f"{pre}/post_attention_layernorm/output_0", "", "", f"{pre}/post_attention_layernorm/output_3"],
                      name=f"{pre}/post_attention_layernorm/SkipLayerNorm", domain="com.microsoft", epsilon=EPS)
        h, residual = outs[0], outs[3]
        # --- MLP
        if fam == "phi3":
            gu = W.rand_matmul(f"{pre}/mlp/gate_up_proj/MatMul", h, H, 2 * I, std_in)
            gate, up = g.node("Split", [gu, g.const([I, I], np.int64)],
                              [f"{pre}/mlp/gate_up_proj/Split/output_{j}" for j in range(2)],
                              name=f"{pre}/mlp/gate_up_proj/Split", axis=-1)
        else:
            gate = W.rand_matmul(f"{pre}/mlp/gate_proj/MatMul", h, H, I, std_in)
            up = W.rand_matmul(f"{pre}/mlp/up_proj/MatMul", h, H, I, std_in)
        sig = g.node("Sigmoid", [gate], name=f"{pre}/mlp/act_fn/Sigmoid")
        act = g.node("Mul", [gate, sig], name=f"{pre}/mlp/act_fn/Mul")
        mul = g.node("Mul", [act, up], name=f"{pre}/mlp/Mul")
        down = W.rand_matmul(f"{pre}/mlp/down_proj/MatMul", mul, I, H, depth_scale(L) * MLP_OUT_SCALE / math.sqrt(I))
        # --- next norm (next layer's input norm, or the final norm)
        if i + 1 < L:
            wn = gain(f"model.layers.{i + 1}.input_layernorm.weight")
            outs = g.node("SkipSimplifiedLayerNormalization", [residual, down, wn],
                          [f"/model/layers.{i + 1}/input_layernorm/output_0", "", "", f"/model/layers.{i + 1}/input_layernorm/output_3"],
                          name=f"/model/layers.{i + 1}/input_layernorm/SkipLayerNorm", domain="com.microsoft", epsilon=EPS)
            h, residual = outs[0], outs[3]
        else:
            wn = gain(f"model.layers.{L}.final_norm_layernorm.weight")
            h = g.node("SkipSimplifiedLayerNormalization", [residual, down, wn],
                       [f"/model/layers.{L}/final_norm_layernorm/output_0"],
                       name=f"/model/layers.{L}/final_norm_layernorm/SkipLayerNorm", domain="com.microsoft", epsilon=EPS)

    special_ids = sorted(specials.values())
    succ = successor_permutation(seed, V, [s for s in special_ids if s < V])
    W.matmul("/lm_head/MatMul", h, H, V, lm_head_rows(seed, embed, succ, H), out="logits")
    return g, W.n_params, succ


def depth_scale(layers):
    """Per-layer output scale sqrt(2 / layers): the residual stream keeps the same token/context mix
    at any depth as the 2-layer tiny model (otherwise deep models wash the token identity out)."""
    return math.sqrt(2.0 / layers)


def lm_head_rows(seed, embed_fn, succ, hidden):
    """Rows of lm_head^T: row j = embedding of the token whose successor is j (+ noise)."""
    V = len(succ)
    # succ is a bijection on the ordinary tokens (one cycle); special tokens also point into the
    # cycle but are never a successor themselves (bincount 0). Keep the ordinary predecessor.
    special = np.bincount(succ, minlength=V) == 0
    pred = np.full(V, -1, dtype=np.int64)
    for t in np.nonzero(~special)[0]:
        pred[succ[t]] = t
    # Logit of the successor ~ LM_HEAD_GAIN * cos(hidden, embedding), independent of the width,
    # while the random overlaps that let the context compete shrink like 1/sqrt(hidden). The extra
    # noise keeps their spread at tiny's (hidden 64) level for any width:
    #   (1 + SELF^2 + noise^2) / hidden == (1 + SELF^2 + LM_HEAD_NOISE^2) / 64
    base_var = 1.0 + LM_HEAD_SELF ** 2
    noise_std = math.sqrt(max(LM_HEAD_NOISE ** 2, (base_var + LM_HEAD_NOISE ** 2) * hidden / 64.0 - base_var))
    gain = np.float32(LM_HEAD_GAIN / hidden)

    def rows(n0, n1):
        e = embed_fn()
        idx = np.arange(n0, n1)
        p = pred[idx]
        base = -np.float32(LM_HEAD_SELF) * e[n0:n1]
        ok = p >= 0
        base[ok] += e[p[ok]]
        noise = normal(seed, f"lm_head.noise#{n0}", (n1 - n0, hidden), noise_std)
        return ((base + noise) * gain).astype(np.float32)

    return rows


def build_gpt2(cfg, seed, specials):
    H, nh, hd, V, L, ctx = (cfg[k] for k in ("hidden", "heads", "head_size", "vocab", "layers", "context_length"))
    if nh * hd != H:
        raise SystemExit(f"gpt2 needs heads * head_size == hidden ({nh}*{hd} != {H})")
    I = cfg["intermediate"]
    g = Graph()
    W = Weights(g, seed, "fp32")
    TF, TI = TensorProto.FLOAT, TensorProto.INT32
    g.inputs.append(helper.make_tensor_value_info("input_ids", TI, ["batch_size", "seq_len"]))
    g.inputs.append(helper.make_tensor_value_info("position_ids", TI, ["batch_size", "seq_len"]))
    g.inputs.append(helper.make_tensor_value_info("attention_mask", TI, ["batch_size", "total_seq_len"]))
    for i in range(L):
        g.inputs.append(helper.make_tensor_value_info(f"past_{i}", TF, [2, "batch_size", nh, "past_seq_len", hd]))
    g.outputs.append(helper.make_tensor_value_info("logits", TF, ["batch_size", "seq_len", V]))
    for i in range(L):
        g.outputs.append(helper.make_tensor_value_info(f"present_{i}", TF, [2, "batch_size", nh, "total_seq_len", hd]))

    embed_cache = {}

    def embed():
        if "e" not in embed_cache:
            embed_cache["e"] = normal(seed, "transformer.wte.weight", (V, H), 1.0)
        return embed_cache["e"]

    wte = g.init("transformer.wte.weight", np.float32, [V, H], embed)
    wpe = g.init("transformer.wpe.weight", np.float32, [ctx, H], lambda: normal(seed, "transformer.wpe.weight", (ctx, H), 0.3))
    W.n_params += V * H + ctx * H
    te = g.node("Gather", ["transformer.wte.weight", "input_ids"], name="/transformer/wte/Gather")
    pe = g.node("Gather", [wpe, "position_ids"], name="/transformer/wpe/Gather")
    x = g.node("Add", [te, pe], name="/transformer/Add")

    def ln(name, inp):
        gw = W.vector(f"{name}.weight", H, lambda: 1.0 + uniform(seed, f"{name}.weight", (H,), -0.1, 0.1))
        gb = W.vector(f"{name}.bias", H, lambda: normal(seed, f"{name}.bias", (H,), 0.02))
        return g.node("LayerNormalization", [inp, gw, gb], name="/" + name.replace(".", "/") + "/LayerNorm", axis=-1, epsilon=EPS)

    def bias(name, n, std=0.02):
        return W.vector(name, n, lambda: normal(seed, name, (n,), std))

    std_in = 1.0 / math.sqrt(H)
    for i in range(L):
        pre = f"transformer.h.{i}"
        h = ln(f"{pre}.ln_1", x)
        wqkv = g.init(f"{pre}.attn.c_attn.weight", np.float32, [H, 3 * H], lambda n=f"{pre}.attn.c_attn.weight": normal(seed, n, (H, 3 * H), std_in))
        W.n_params += 3 * H * H
        bqkv = bias(f"{pre}.attn.c_attn.bias", 3 * H)
        a, _ = g.node("Attention", [h, wqkv, bqkv, "attention_mask", f"past_{i}"],
                      [f"/transformer/h.{i}/attn/Attention/output_0", f"present_{i}"],
                      name=f"/transformer/h.{i}/attn/Attention", domain="com.microsoft", num_heads=nh, unidirectional=1)
        o = W.rand_matmul(f"/transformer/h.{i}/attn/c_proj/MatMul", a, H, H, depth_scale(L) * ATTN_OUT_SCALE / math.sqrt(H))
        o = g.node("Add", [o, bias(f"{pre}.attn.c_proj.bias", H)], name=f"/transformer/h.{i}/attn/c_proj/Add")
        x = g.node("Add", [x, o], name=f"/transformer/h.{i}/Add")
        h = ln(f"{pre}.ln_2", x)
        f1 = W.rand_matmul(f"/transformer/h.{i}/mlp/c_fc/MatMul", h, H, I, std_in)
        f1 = g.node("FastGelu", [f1, bias(f"{pre}.mlp.c_fc.bias", I)], name=f"/transformer/h.{i}/mlp/FastGelu", domain="com.microsoft")
        f2 = W.rand_matmul(f"/transformer/h.{i}/mlp/c_proj/MatMul", f1, I, H, depth_scale(L) * MLP_OUT_SCALE / math.sqrt(I))
        f2 = g.node("Add", [f2, bias(f"{pre}.mlp.c_proj.bias", H)], name=f"/transformer/h.{i}/mlp/c_proj/Add")
        x = g.node("Add", [x, f2], name=f"/transformer/h.{i}/Add_1")
    h = ln("transformer.ln_f", x)
    special_ids = sorted(specials.values())
    succ = successor_permutation(seed, V, [s for s in special_ids if s < V])
    W.matmul("/lm_head/MatMul", h, H, V, lm_head_rows(seed, embed, succ, H), out="logits")
    return g, W.n_params, succ


def build_bert(cfg, seed, specials):
    H, nh, hd, V, L, ctx, I = (cfg[k] for k in ("hidden", "heads", "head_size", "vocab", "layers", "context_length", "intermediate"))
    if nh * hd != H:
        raise SystemExit(f"bert needs heads * head_size == hidden ({nh}*{hd} != {H})")
    g = Graph()
    W = Weights(g, seed, "fp32")
    TF, TL = TensorProto.FLOAT, TensorProto.INT64
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        g.inputs.append(helper.make_tensor_value_info(n, TL, ["batch_size", "sequence_length"]))
    g.outputs.append(helper.make_tensor_value_info("last_hidden_state", TF, ["batch_size", "sequence_length", H]))

    def emb(name, rows, std):
        W.n_params += rows * H
        return g.init(name, np.float32, [rows, H], lambda: normal(seed, name, (rows, H), std))

    we = emb("embeddings.word_embeddings.weight", V, 1.0)
    pe = emb("embeddings.position_embeddings.weight", ctx, 0.3)
    tte = emb("embeddings.token_type_embeddings.weight", 2, 0.3)
    shp = g.node("Shape", ["input_ids"], name="/embeddings/Shape")
    seq = g.node("Gather", [shp, g.const(1, np.int64)], name="/embeddings/Gather", axis=0)
    pos = g.node("Range", [g.const(0, np.int64), seq, g.const(1, np.int64)], name="/embeddings/Range")
    x = g.node("Gather", [we, "input_ids"], name="/embeddings/word_embeddings/Gather")
    p = g.node("Gather", [pe, pos], name="/embeddings/position_embeddings/Gather")
    t = g.node("Gather", [tte, "token_type_ids"], name="/embeddings/token_type_embeddings/Gather")
    x = g.node("Add", [x, t], name="/embeddings/Add")
    x = g.node("Add", [x, p], name="/embeddings/Add_1")

    def ln(name, inp, out=None):
        gw = W.vector(f"{name}.weight", H, lambda: 1.0 + uniform(seed, f"{name}.weight", (H,), -0.1, 0.1))
        gb = W.vector(f"{name}.bias", H, lambda: normal(seed, f"{name}.bias", (H,), 0.02))
        return g.node("LayerNormalization", [inp, gw, gb], [out] if out else None,
                      name="/" + name.replace(".", "/") + "/LayerNorm", axis=-1, epsilon=1e-12)

    def bias(name, n, std=0.02):
        return W.vector(name, n, lambda: normal(seed, name, (n,), std))

    x = ln("embeddings.LayerNorm", x)
    mask = g.node("Cast", ["attention_mask"], name="/encoder/mask/Cast", to=TensorProto.INT32)
    std_in = 1.0 / math.sqrt(H)
    for i in range(L):
        pre = f"encoder.layer.{i}"
        wqkv = g.init(f"{pre}.attention.self.qkv.weight", np.float32, [H, 3 * H],
                      lambda n=f"{pre}.attention.self.qkv.weight": normal(seed, n, (H, 3 * H), std_in))
        W.n_params += 3 * H * H
        a = g.node("Attention", [x, wqkv, bias(f"{pre}.attention.self.qkv.bias", 3 * H), mask],
                   name=f"/encoder/layer.{i}/attention/Attention", domain="com.microsoft", num_heads=nh)
        o = W.rand_matmul(f"/encoder/layer.{i}/attention/output/dense/MatMul", a, H, H, 1.0 / math.sqrt(H))
        o = g.node("Add", [o, bias(f"{pre}.attention.output.dense.bias", H)], name=f"/encoder/layer.{i}/attention/output/dense/Add")
        x = ln(f"{pre}.attention.output.LayerNorm", g.node("Add", [x, o], name=f"/encoder/layer.{i}/attention/output/Add"))
        f = W.rand_matmul(f"/encoder/layer.{i}/intermediate/dense/MatMul", x, H, I, std_in)
        f = g.node("Add", [f, bias(f"{pre}.intermediate.dense.bias", I)], name=f"/encoder/layer.{i}/intermediate/dense/Add")
        f = g.node("Gelu", [f], name=f"/encoder/layer.{i}/intermediate/Gelu", domain="com.microsoft")
        f = W.rand_matmul(f"/encoder/layer.{i}/output/dense/MatMul", f, I, H, 1.0 / math.sqrt(I))
        f = g.node("Add", [f, bias(f"{pre}.output.dense.bias", H)], name=f"/encoder/layer.{i}/output/dense/Add")
        last = i == L - 1
        x = ln(f"{pre}.output.LayerNorm", g.node("Add", [x, f], name=f"/encoder/layer.{i}/output/Add"),
               out="last_hidden_state" if last else None)
    return g, W.n_params, None


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------
def _iter_chunks(init):
    r = init.produce()
    if isinstance(r, np.ndarray):
        yield r
    else:
        yield from r


def _as_bytes(init, arr):
    arr = np.asarray(arr)
    if arr.dtype != np.dtype(init.dtype):
        raise AssertionError(f"{init.name}: dtype {arr.dtype} != {np.dtype(init.dtype)}")
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def _inline_tensor(init):
    t = TensorProto()
    t.name = init.name
    t.data_type = _np_to_onnx(init.dtype)
    t.dims.extend(init.shape)
    t.raw_data = b"".join(_as_bytes(init, c) for c in _iter_chunks(init))
    return t


def write_model(g, out_dir, external):
    total = sum(i.nbytes for i in g.inits)
    use_ext = external == "always" or (external == "auto" and total > EXTERNAL_AUTO_BYTES)
    data_name = "model.onnx.data"
    data_path = os.path.join(out_dir, data_name)
    tensors = []
    if use_ext:
        offset = 0
        with open(data_path, "wb") as f:
            for init in g.inits:
                if init.nbytes < INLINE_BYTES:
                    tensors.append(_inline_tensor(init))
                    continue
                pad = (-offset) % ALIGN
                if pad:
                    f.write(b"\0" * pad)
                    offset += pad
                start = offset
                for chunk in _iter_chunks(init):
                    b = _as_bytes(init, chunk)
                    f.write(b)
                    offset += len(b)
                if offset - start != init.nbytes:
                    raise AssertionError(f"{init.name}: wrote {offset - start} bytes, expected {init.nbytes}")
                t = TensorProto()
                t.name = init.name
                t.data_type = _np_to_onnx(init.dtype)
                t.dims.extend(init.shape)
                t.data_location = TensorProto.EXTERNAL
                for k, v in (("location", data_name), ("offset", str(start)), ("length", str(init.nbytes))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
                tensors.append(t)
    else:
        if os.path.exists(data_path):
            os.remove(data_path)
        for init in g.inits:
            tensors.append(_inline_tensor(init))
    graph = helper.make_graph(g.nodes, "main_graph", g.inputs, g.outputs, initializer=tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="ebb-synth_model", producer_version=SCRIPT_VERSION)
    model.ir_version = 8
    path = os.path.join(out_dir, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString(deterministic=True) if _supports_deterministic() else model.SerializeToString())
    return path, use_ext, total


def _supports_deterministic():
    try:
        TensorProto().SerializeToString(deterministic=True)
        return True
    except TypeError:
        return False


def write_json(path, obj):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def genai_config(cfg, specials):
    fam = cfg["family"]
    sess = {"log_id": "onnxruntime-genai", "provider_options": []}
    if fam == "bert":
        return {"model": {
            "bos_token_id": specials["[CLS]"], "context_length": cfg["context_length"],
            "encoder": {"session_options": sess, "filename": "model.onnx", "head_size": cfg["head_size"],
                        "hidden_size": cfg["hidden"],
                        "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                   "token_type_ids": "token_type_ids"},
                        "outputs": {"last_hidden_state": "last_hidden_state"},
                        "num_attention_heads": cfg["heads"], "num_hidden_layers": cfg["layers"]},
            "eos_token_id": specials["[SEP]"], "pad_token_id": specials["[PAD]"], "type": "bert",
            "vocab_size": cfg["vocab"]}}
    search = {"diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
              "max_length": cfg["context_length"], "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
              "num_return_sequences": 1, "past_present_share_buffer": fam != "gpt2", "repetition_penalty": 1.0,
              "temperature": 1.0, "top_k": 1, "top_p": 1.0}
    eot = specials["<|endoftext|>"]
    if fam == "gpt2":
        return {"model": {
            "type": "gpt2", "pad_token_id": eot, "bos_token_id": eot, "eos_token_id": eot,
            "vocab_size": cfg["vocab"], "context_length": cfg["context_length"],
            "decoder": {
                "session_options": sess, "filename": "model.onnx",
                "num_key_value_heads": cfg["heads"], "head_size": cfg["head_size"],
                "num_hidden_layers": cfg["layers"], "hidden_size": cfg["hidden"], "num_attention_heads": cfg["heads"],
                "inputs": {"input_ids": "input_ids", "position_ids": "position_ids", "attention_mask": "attention_mask",
                           "past_names": "past_%d"},
                "outputs": {"logits": "logits", "present_names": "present_%d"}}},
            "search": search}
    inputs = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
    if cfg["rotary_form"] == "unfused":
        inputs["position_ids"] = "position_ids"
    inputs.update({"past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"})
    eos = [specials["<|end|>"], eot] if fam == "phi3" else specials["<|end|>"]
    return {"model": {
        "bos_token_id": eot, "context_length": cfg["context_length"],
        "decoder": {"session_options": sess, "filename": "model.onnx", "head_size": cfg["head_size"],
                    "hidden_size": cfg["hidden"], "inputs": inputs,
                    "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                "present_value_names": "present.%d.value"},
                    "num_attention_heads": cfg["heads"], "num_hidden_layers": cfg["layers"],
                    "num_key_value_heads": cfg["kv_heads"]},
        "eos_token_id": eos, "pad_token_id": eot, "type": fam, "vocab_size": cfg["vocab"]},
        "search": search}


def tokenizer_config(cfg, tok, specials):
    added = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
             for t in tok["added_tokens"]}
    if cfg["family"] == "bert":
        return {"added_tokens_decoder": added, "clean_up_tokenization_spaces": True, "cls_token": "[CLS]",
                "do_lower_case": True, "mask_token": "[MASK]", "model_max_length": cfg["context_length"],
                "pad_token": "[PAD]", "sep_token": "[SEP]", "strip_accents": None, "tokenize_chinese_chars": True,
                "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]"}
    return {"add_bos_token": False, "add_eos_token": False, "add_prefix_space": False,
            "added_tokens_decoder": added, "bos_token": "<|endoftext|>", "chat_template": CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<|endoftext|>" if cfg["family"] == "gpt2" else "<|end|>",
            "model_max_length": cfg["context_length"], "pad_token": "<|endoftext|>",
            "tokenizer_class": "GPT2Tokenizer", "unk_token": None}


def resolve_config(args):
    cfg = dict(PRESETS[args.preset])
    for k in ("layers", "hidden", "heads", "kv_heads", "head_size", "intermediate", "vocab", "context_length"):
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    if args.hidden is not None and args.head_size is None and args.heads is not None:
        cfg["head_size"] = cfg["hidden"] // cfg["heads"]
    if args.precision:
        cfg["precision"] = args.precision
    cfg["family"] = args.family
    if args.family in ("gpt2", "bert"):
        if args.precision == "int4":
            raise SystemExit(f"--precision int4 is supported for llama, phi3, qwen2 only")
        cfg["precision"] = "fp32"
        cfg["kv_heads"] = cfg["heads"]
        if args.intermediate is None:
            cfg["intermediate"] = 4 * cfg["hidden"]
        if args.head_size is None:
            cfg["head_size"] = cfg["hidden"] // cfg["heads"]
        cfg["rotary_form"] = None
    else:
        form = args.rotary_form or ("fused" if cfg["head_size"] % 16 == 0 else "unfused")
        cfg["rotary_form"] = form
        if cfg["heads"] % cfg["kv_heads"]:
            raise SystemExit("heads must be a multiple of kv_heads")
        if cfg["head_size"] % 8:
            raise SystemExit("GroupQueryAttention needs head_size % 8 == 0")
        if form == "fused" and cfg["head_size"] % 16:
            raise SystemExit("fused rotary needs head_size % 16 == 0 (ORT CPU GroupQueryAttention); use --rotary-form unfused")
    if args.family == "bert" and args.context_length is None:
        cfg["context_length"] = min(cfg["context_length"], 512)
    block = getattr(args, "block_size", None)
    if cfg["precision"] == "int4":
        cfg["block_size"] = block or INT4_BLOCK_DEFAULT
    elif block is not None:
        raise SystemExit(f"--block-size applies to --precision int4 only (this model is {cfg['precision']})")
    return cfg


def generate(args):
    cfg = resolve_config(args)
    # --gguf: int4 scales rounded to fp16, so that a Q4_0 block (fp16 d) holds the same values
    cfg["fp16_scales"] = bool(getattr(args, "gguf", None)) and cfg["precision"] == "int4"
    os.makedirs(args.out, exist_ok=True)
    fam = cfg["family"]
    if fam == "bert" and args.tokenizer:
        tok, specials, n_tok = load_wordpiece_tokenizer(args.tokenizer, cfg["vocab"])
    elif fam == "bert":
        tok, specials, n_tok = make_wordpiece_tokenizer(cfg["vocab"],
                                                        args.tokenizer_tokens or TOKENIZER_MAX_VOCAB)
    else:
        tok, specials, n_tok = make_bpe_tokenizer(cfg["vocab"])
    assert n_tok <= cfg["vocab"] and max(specials.values()) < cfg["vocab"]
    builder = {"gpt2": build_gpt2, "bert": build_bert}.get(fam, build_llama_style)
    g, n_params, succ = builder(cfg, (args.seed, fam), specials)
    path, ext, total = write_model(g, args.out, args.external_data)
    write_json(os.path.join(args.out, "tokenizer.json"), tok)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config(cfg, tok, specials))
    write_json(os.path.join(args.out, "genai_config.json"), genai_config(cfg, specials))
    info = {"generator": "tools/synth_model.py", "script_version": SCRIPT_VERSION, "family": fam,
            "preset": args.preset, "seed": args.seed, "precision": cfg["precision"],
            "rotary_form": cfg["rotary_form"],
            "dims": {k: cfg[k] for k in ("layers", "hidden", "heads", "kv_heads", "head_size", "intermediate",
                                         "vocab", "context_length")},
            "rope_theta": ROPE_THETA.get(fam), "parameters": int(n_params), "initializer_bytes": int(total),
            "external_data": ext, "tokenizer_tokens": n_tok, "special_tokens": specials}
    if cfg["precision"] == "int4":
        info["int4_block_size"] = cfg["block_size"]  # also each MatMulNBits node's block_size
    if cfg["fp16_scales"]:
        info["int4_scales"] = "fp16-rounded"  # only then, so other folders stay as before
    write_json(os.path.join(args.out, "synth_info.json"), info)
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--precision", choices=("fp32", "int4"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    for k in ("layers", "hidden", "heads", "kv-heads", "head-size", "intermediate", "vocab", "context-length"):
        ap.add_argument(f"--{k}", type=int, dest=k.replace("-", "_"))
    ap.add_argument("--rotary-form", choices=("fused", "unfused"))
    ap.add_argument("--block-size", type=int, choices=INT4_BLOCK_SIZES,
                    help=f"int4: MatMulNBits block size along K (default {INT4_BLOCK_DEFAULT}); a K that "
                    "is not a multiple of it is zero-padded to whole blocks, as MatMulNBits defines")
    ap.add_argument("--external-data", choices=("auto", "always", "never"), default="auto")
    ap.add_argument("--tokenizer-tokens", type=int, help="cap on the learned tokenizer's size")
    ap.add_argument("--tokenizer", help="bert: use this HF tokenizer.json instead of learning one")
    ap.add_argument("--check", action="store_true", help="run onnx.checker on the result")
    ap.add_argument("--gguf", metavar="OUT.gguf", help="also write the model as a llama.cpp GGUF (llama, phi3; see "
                    "tools/synth_gguf.py); int4 scales are then rounded to fp16")
    ap.add_argument("--gguf-type", choices=("q4_0", "f16"),
                    help="GGUF matmul type (default: q4_0 for int4, f16 for fp32)")
    args = ap.parse_args(argv)
    if args.gguf:
        if args.family not in ("llama", "phi3"):
            raise SystemExit(f"--gguf supports --family llama and phi3, not {args.family}"
                             + (" (its q/k/v biases are not part of llama.cpp's llama architecture)"
                                if args.family == "qwen2" else ""))
        precision = args.precision or PRESETS[args.preset]["precision"]
        args.gguf_type = args.gguf_type or ("q4_0" if precision == "int4" else "f16")
        if args.gguf_type == "q4_0" and precision != "int4":
            raise SystemExit("--gguf-type q4_0 needs --precision int4 (fp32 weights have no 4-bit codes to share)")
        if args.gguf_type == "q4_0" and (args.block_size or INT4_BLOCK_DEFAULT) % 32:
            raise SystemExit(f"--gguf-type q4_0 needs --block-size 32 or more (a Q4_0 block holds one scale per 32 "
                             f"weights; block {args.block_size} has two); use --gguf-type f16")
    info = generate(args)
    if args.check:
        onnx.checker.check_model(os.path.join(args.out, "model.onnx"))
    if args.gguf:
        import synth_gguf  # only --gguf needs it
        info.update(synth_gguf.convert(args.out, args.gguf, args.gguf_type))
    print(json.dumps({k: info[k] for k in ("family", "preset", "precision", "rotary_form", "parameters",
                                           "initializer_bytes", "external_data", "gguf", "gguf_bytes")
                      if k in info}))


if __name__ == "__main__":
    main()
