// The reference side of bench/bench-tokenizer-parity: Hugging Face's
// tokenizers library (the Rust implementation, npm package `tokenizers`)
// tokenizing generated lines with a generated BERT vocabulary, under the
// tokenizer settings real Chinese BERTs use. Writes one JSON fixture:
//   {"vocab": [...], "configs": [{"name", "options", "ids": [[...], ...]}], "lines": [...]}
// which zibert's test (tests/test_wordpiece.cpp) reads and compares id for id.
// usage: node bench/tokenizer_parity.js OUT.json LINES [SEED]
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

const [out, linesArg, seedArg] = process.argv.slice(2);
const count = Number(linesArg || 2000);
let state = Number(seedArg || 20261205) >>> 0;
function rand() {  // mulberry32
  state = (state + 0x6D2B79F5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const chr = (cp) => String.fromCodePoint(cp);

// Text the lines are made of: written for this test, plus code points drawn from the ranges that matter.
const hanzi = Array.from('佛跳墙牆墻年夜饭的压轴菜是一道福建名菜他们点了坛说镇店之宝要提前天预订預訂店家材料燉八小时時' +
  '今天气不错请输入密码碼外卖送得很快味道好吃服务态度熊猫烧鸡翅膀红烧肉汤麵面条餐厅廳');
const words = ['the', 'The', 'play', 'playing', 'played', 'unbelievable', 'BERT', 'bert', 'Hugging', 'Face', 'tokenizer',
  'café', 'Café', 'naïve', 'Ångström', 'İstanbul', 'straße', 'STRASSE', 'ΣΟΦΙΑ', 'σοφία', 'résumé', 'Ｆｕｌｌ', 'ＡＢＣ',
  'x', 'I', 'ok', 'OK', 'don\'t', 'e-mail', 'C++', 'co-op'];
const punct = Array.from('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~，。！？、；：「」『』《》（）【】…—～·“”‘’');
const odd = ['\u0000', '\u0007', '\u001f', '\u007f', '\u0085', '\u00a0', '\u00ad', '\u1680', '\u2003', '\u200b', '\u200d',
  '\u2028', '\u2029', '\u202f', '\u3000', '\ufeff', '\ufffd', '\t', '\r', '\u000b', '\u000c', '\u0301', '\u0308',
  '\ue000', '\ud83d\ude00', '\ud83d\udc4d\ud83c\udffd', '\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67', '\u2603', '\u00e9',
  'e\u0301', '\u1100\u1161', '\uac00', '\u3042', '\u30a2', '\uff71', '\u2460', '\u00bd', '\u2070', '\u03a3'];
const specials = ['[MASK]', '[SEP]', '[CLS]', '[UNK]', '[PAD]', '[mask]', '[MASK', 'MASK]', '[unused1]', '[[MASK]]'];
const ranges = [[0x4E00, 0x9FFF], [0x3400, 0x4DBF], [0x20000, 0x2A6DF], [0x2A700, 0x2B73F], [0x2B740, 0x2B81F],
  [0x2B810, 0x2B930], [0x2CEA0, 0x2CEBF], [0xF900, 0xFAFF], [0x2F800, 0x2FA1F], [0x3040, 0x30FF], [0xAC00, 0xD7A3],
  [0xFF01, 0xFF5E], [0x0370, 0x03FF], [0x0400, 0x04FF], [0x00C0, 0x024F], [0x1F300, 0x1F6FF], [0x2000, 0x206F]];

function piece() {
  const r = rand();
  if (r < 0.30) return Array.from({ length: between(1, 8) }, () => pick(hanzi)).join('');
  if (r < 0.45) return pick(words);
  if (r < 0.55) return pick(punct);
  if (r < 0.63) return pick(odd);
  if (r < 0.68) return pick(specials);
  if (r < 0.74) return String(between(0, 100000)) + (rand() < 0.3 ? '.' + between(0, 99) : '');
  if (r < 0.77) return pick(['https://example.com/a?b=c&d=e#f', 'www.zibert.dev', 'user@example.org', '192.168.0.1']);
  if (r < 0.80) return Array.from({ length: between(90, 130) }, () => pick(Array.from('abcdefghij'))).join('');
  if (r < 0.82) return Array.from({ length: between(95, 105) }, () => pick(hanzi)).join('');
  const [lo, hi] = pick(ranges);
  return Array.from({ length: between(1, 4) }, () => chr(between(lo, hi))).join('');
}
function line() {
  const n = between(1, 14);
  let s = '';
  for (let i = 0; i < n; i++) s += (rand() < 0.5 ? ' ' : '') + piece();
  return s.replace(/\n/g, ' ');
}

// The vocabulary, laid out as bert-base-chinese's: [PAD], [unused1..99], [UNK], [CLS], [SEP], [MASK], then
// punctuation, digits, letters, CJK characters, words and ## pieces.
function vocabulary() {
  const v = ['[PAD]'];
  for (let i = 1; i < 100; i++) v.push(`[unused${i}]`);
  v.push('[UNK]', '[CLS]', '[SEP]', '[MASK]', '<S>', '<T>');
  const seen = new Set(v);
  const add = (t) => { if (!seen.has(t)) { seen.add(t); v.push(t); } };
  punct.forEach(add);
  for (let d = 0; d <= 9; d++) { add(String(d)); add('##' + d); }
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéèàüöäåñç') { add(c); add('##' + c); }
  ['the', 'play', '##ing', '##ed', '##s', 'un', '##believ', '##able', 'bert', 'BERT', 'hugging', 'face', 'token',
    '##izer', 'cafe', 'café', 'naive', 'angstrom', 'istanbul', 'i̇stanbul', 'straße', 'strasse', 'σοφια', 'σοφία', 'resume',
    'résumé', 'ok', 'don', 't', 'e', 'mail', 'co', 'op', '100', '##00', '2026', 'https', 'www', 'com', 'example',
    'org', 'user', '##com', 'zibert', 'dev', 'full', 'abc', 'ａｂｃ', '##ｂ', 'ｆｕｌｌ', 'ΣΟΦΙΑ'].forEach(add);
  hanzi.forEach((c) => { add(c); if (rand() < 0.5) add('##' + c); });
  for (const [lo, hi] of ranges) for (let i = 0; i < 40; i++) add(chr(between(lo, hi)));
  ['😀', '👍', '☃', '①', '½', 'ア', 'あ', '가', '가'].forEach(add);
  return v;
}

const CONFIGS = [
  { name: 'bert-base-chinese', options: { lowercase: true, strip_accents: null, handle_chinese_chars: true, clean_text: true } },
  { name: 'cased', options: { lowercase: false, strip_accents: null, handle_chinese_chars: true, clean_text: true } },
  { name: 'lowercase-keep-accents', options: { lowercase: true, strip_accents: false, handle_chinese_chars: false, clean_text: true } },
];

function tokenizerJson(vocab, o) {
  const ids = Object.fromEntries(vocab.map((t, i) => [t, i]));
  const sp = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const special = (t) => ({ SpecialToken: { id: t, type_id: 0 } });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: sp.map((t) => ({ id: ids[t], content: t, single_word: false, lstrip: false, rstrip: false,
      normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', ...o },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing', single: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } },
      special('[SEP]')], pair: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]'),
      { Sequence: { id: 'B', type_id: 1 } }, special('[SEP]')],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [ids['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [ids['[SEP]']], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
      vocab: ids },
  };
}

(async () => {
  const vocab = vocabulary();
  const lines = Array.from({ length: count }, line);
  const configs = [];
  for (const c of CONFIGS) {
    const tok = Tokenizer.fromString(JSON.stringify(tokenizerJson(vocab, c.options)));
    const ids = [];
    for (const l of lines) ids.push((await tok.encode(l)).getIds());
    configs.push({ name: c.name, options: c.options, ids });
  }
  fs.writeFileSync(out, JSON.stringify({ generator: 'bench/tokenizer_parity.js', tokenizers: require('tokenizers/package.json').version,
    vocab, lines, configs }));
  process.stderr.write(`tokenizer_parity: ${lines.length} lines x ${configs.length} settings, ${vocab.length} tokens -> ${out}\n`);
})();
