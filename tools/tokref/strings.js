// Deterministic test strings for the tokenizer reference data (see README.md).
// commonStrings(): >= 220 varied strings shared by every family; familyStrings(specials):
// strings that type the family's special/added tokens into user text.
'use strict';

// mulberry32: small deterministic PRNG.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIXED = [
  // Known answers and plain English.
  'Hello world', ' Hello', 'This is a test.', 'Hello  world', 'hello', 'HELLO WORLD',
  'The quick brown fox jumps over the lazy dog.',
  "I'm sure they'll say it's fine, but we've seen what'd happen if you're wrong.",
  "I'M SURE THEY'LL SAY IT'S FINE. WE'VE SEEN IT'D BREAK. YOU'RE WRONG. DON'T",
  "rock 'n' roll, 'quoted', ''double'', the dogs' bowls",
  'Mr. Smith went to Washington, D.C., on Jan. 3rd — or was it the 4th?',
  'e.g. i.e. etc. vs. U.S.A.', 'Hyphen-ated words and en–dash and em—dash',
  'unbelievably', 'antidisestablishmentarianism', 'Supercalifragilisticexpialidocious',
  'tokenization tokenizer tokenized tokenizing', 'running ran runs runner',
  // Whitespace.
  '', ' ', '  ', '   ', '\t', '\n', '\r\n', '\n\n\n', ' \t \n ', 'a  b   c    d',
  '  leading spaces', 'trailing spaces   ', '   both   ', 'tab\tseparated\tvalues',
  'line1\nline2\r\nline3\rline4', 'para one\n\npara two\n\n\n\npara three',
  'nbsp\u00a0here and\u00a0\u00a0twice', 'ideographic\u3000space', 'line\u2028separator',
  'para\u2029separator', 'next\u0085line', 'zero\u200bwidth\u200bspace', 'bom\ufeffinside',
  'thin\u2009space and hair\u200aspace', 'ogham\u1680space', 'narrow\u202fnbsp',
  'x' + ' '.repeat(40) + 'y', ' '.repeat(65), '\t\t\tindented', '\n    four-space indented',
  'mixed \u00a0 \u3000 \t whitespace', 'vertical\u000btab and form\u000cfeed',
  // Digits and numbers.
  '0', '123', '1234', '12345678901234567890', '3.14159265358979', '1,000,000.00', '-42',
  '2024-06-01T12:34:56Z', '+1 (555) 123-4567', 'version 1.2.3-rc.4', '0x7fffffff 0b1010 1e-9',
  '9'.repeat(100), 'Arabic-Indic digits ٠١٢٣٤٥٦٧٨٩', 'fullwidth １２３４５', 'superscript x² y³ ½ ¼',
  'Roman numerals Ⅻ ⅻ', 'devanagari १२३', 'mixed123abc456def', 'abc123', '123abc',
  // Code.
  'def f(x):\n    return x ** 2  # square\n',
  'for (int i = 0; i < n; ++i) { sum += a[i]; }',
  '#include <stdio.h>\nint main(void) { printf("hi\\n"); return 0; }',
  '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
  '<div class="container"><p>Hello &amp; welcome</p></div>',
  'SELECT id, name FROM users WHERE age >= 18 ORDER BY name;',
  "const re = /^[a-z0-9_-]{3,16}$/i; console.log(re.test('user_01'));",
  'git commit -m "Fix: handle \\"quotes\\"" && git push origin main',
  'fn main() { let v: Vec<u8> = vec![0; 10]; println!("{:?}", v); }',
  'x = [i for i in range(10) if i % 2 == 0]', 'a->b; c::d; e=>f; g!=h; i<=j; k>=l; m&&n||o',
  '    if (x) {\n        y();\n    }\n', '//comment\n/* block */\n# hash\n-- sql',
  'https://example.com/path/to/page?query=1&lang=en#section',
  'user.name+tag@example.co.uk', 'C:\\Windows\\System32\\drivers', '$HOME/.config/app.toml',
  '@decorator\nclass Foo(Base):\n\tpass', '~!@#$%^&*()_+`-=[]\\{}|;\':",./<>?',
  '!!!???...,,,;;;', '"""docstring"""', "''' triple '''", '<<<>>>', '(((nested)))',
  // Emoji.
  '😀', 'I love 🍕 and 🍣!', '👍🏽👍🏿', '👨‍👩‍👧‍👦 family', '🇯🇵🇺🇸🇫🇷 flags', '❤️ red heart',
  '🏳️‍🌈', 'emoji😀without😀spaces', '🙂🙃🙂🙃🙂🙃', '✅ done ❌ failed ⚠️ warning', '©®™',
  // CJK and other scripts.
  '你好，世界！', '我爱自然语言处理。', 'こんにちは世界', 'カタカナとひらがな', '日本語のテキストです。',
  '안녕하세요 세계', '\u1100\u1161\u11a8 decomposed hangul', '한국어 텍스트', '𠀀𠀁 CJK ext B',
  '\u{2b820}\u{2b920}\u{2ceb0} CJK ext E/F', '中文English混合mixed', '全角ＡＢＣ and 半角ｱｲｳ',
  'Ελληνικά κείμενο', 'Русский текст, привет!', 'Українська мова', 'ภาษาไทย', 'हिन्दी भाषा',
  'বাংলা', 'ქართული', 'Հայերեն', 'አማርኛ', 'ᚠᚢᚦᚨᚱᚲ runes',
  // Accents and Unicode normalization.
  'café', 'cafe\u0301', 'naïve résumé', 'Ångström', 'A\u030angstro\u0308m', 'Tiếng Việt có dấu',
  'İstanbul', 'ISTANBUL ıi', 'straße STRASSE', 'ſ long s', 'K Kelvin sign', 'ﬁ ﬂ ligatures',
  'Ǆ ǅ ǆ digraphs', 'ΣΑΣ σας ς', 'Ⓐⓑⓒ circled', '𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐', 'x\u0308\u0301\u0323 stacked marks',
  '\u0301leading combining mark', 'Zalgo T̷̢̛h̶̨i̵s̴', 'ＡＢＣ ｄｅｆ', '™ ℃ № ℡',
  // Right-to-left and bidi.
  'مرحبا بالعالم', 'السلام عليكم ورحمة الله', 'שלום עולם', 'עברית עם ניקוד: שָׁלוֹם',
  'English then עברית then English', '\u200fRLM mark\u200e LRM mark', 'فارسی ۱۲۳',
  '\u202eRLO override\u202c',
  // Control characters.
  'nul\u0000byte', 'bell\u0007 and escape\u001b[31mred\u001b[0m', 'del\u007f', '\u0001\u0002\u0003',
  'c1 control\u0080\u009f', 'replacement \ufffd char', 'private use \ue000\uf8ff',
  'noncharacter \ufdd0 \uffff', '\u{10ffff} max code point',
  // Long inputs.
  'a'.repeat(300), 'ab'.repeat(200), 'The end. '.repeat(40),
  'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor '.repeat(6),
];

const POOL = [
  'the', 'of', 'and', 'token', 'izer', ' ', '  ', '\t', '\n', '\r\n', ',', '.', '!', '?', "'s",
  "'LL", '123', '4567', '3.5', '😀', '👍🏽', '你好', '世界', 'こんにちは', '한국', 'café',
  'e\u0301', 'İ', 'ß', 'ﬁ', 'مرحبا', 'שלום', '\u00a0', '\u3000', '\u200b', '#', '//', '{', '}',
  '()', '=>', '$', '_', '-', '—', '…', '"', '<', '>', '<|', '|>', '</', '[', ']', 'x', 'Z',
  'HTTP', 'https://', 'λ', 'Ω', '∑', '√', '∞', '\u0000', '\u001b', 'ab', 'ba', '____', '   ',
];

function commonStrings() {
  const out = FIXED.slice();
  const r = rng(12345);
  for (let i = 0; i < 80; ++i) {
    const n = 1 + Math.floor(r() * 12);
    let s = '';
    for (let k = 0; k < n; ++k) s += POOL[Math.floor(r() * POOL.length)];
    out.push(s);
  }
  return out;
}

// Strings that contain the family's added tokens typed by a user.
function familyStrings(specials) {
  const out = [];
  const r = rng(777);
  const pick = () => specials[Math.floor(r() * specials.length)];
  for (const sp of specials.slice(0, 6)) {
    out.push(sp, `${sp}Hello`, `Hello${sp}`, ` ${sp} `, `a ${sp}  b`, `${sp}${sp}`,
             `x\n${sp}\ny`, `${sp.slice(0, Math.max(1, sp.length - 1))} partial`);
  }
  for (let i = 0; i < 30; ++i) {
    const words = ['Hi', ' there', '  ', 'user', '\n', '你好', '😀', ' end', "'s", '42', '\t'];
    let s = '';
    const n = 2 + Math.floor(r() * 6);
    for (let k = 0; k < n; ++k) s += r() < 0.4 ? pick() : words[Math.floor(r() * words.length)];
    out.push(s);
  }
  return out;
}

// Random valid text from a mixed alphabet (used for decode cases).
function randomText(r, len) {
  const ranges = [[0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff],
                  [0x400, 0x4ff], [0x4e00, 0x4fff], [0x3040, 0x30ff], [0xac00, 0xad00],
                  [0x1f600, 0x1f64f], [0x9, 0xa]];
  let s = '';
  for (let i = 0; i < len; ++i) {
    const [a, b] = ranges[Math.floor(r() * ranges.length)];
    s += String.fromCodePoint(a + Math.floor(r() * (b - a + 1)));
  }
  return s;
}

module.exports = { rng, commonStrings, familyStrings, randomText, FIXED };
