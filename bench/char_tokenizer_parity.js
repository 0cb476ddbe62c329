// The reference side of bench/bench-tokenizer-parity's character part: the
// tokenizer.json zibert export --hf writes for a character-tokenizer model,
// read by Hugging Face's tokenizers (npm package `tokenizers`), encoding each
// line of a file. Prints one line of space-separated ids per input line.
// usage: node bench/char_tokenizer_parity.js TOKENIZER.json LINES.txt
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

(async () => {
  const [tokenizerPath, linesPath] = process.argv.slice(2);
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const lines = fs.readFileSync(linesPath, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out = [];
  for (const line of lines) {
    const enc = await tokenizer.encode(line);
    out.push(enc.getIds().join(' '));
  }
  process.stdout.write(out.join('\n') + '\n');
})();
