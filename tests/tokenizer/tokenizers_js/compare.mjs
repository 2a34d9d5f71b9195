// Encodes the verse texts of TEXT_FILE (as one text, one verse per line), a rendered chat turn and
// a string of awkward characters with Hugging Face's tokenizers.js and with `unmask-engine
// tokenize` (one process per text: each start loads LibTorch), and fails on the first difference
// in ids or in the text the ids decode back to.
//   node compare.mjs TOKENIZER_JSON TEXT_FILE UNMASK_ENGINE
import { Tokenizer } from "@huggingface/tokenizers";
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const [tokenizerPath, textPath, engine] = process.argv.slice(2);
if (!engine) {
  console.error("usage: node compare.mjs TOKENIZER_JSON TEXT_FILE UNMASK_ENGINE");
  process.exit(2);
}
const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerPath, "utf8")), {});

function unmaskIds(text) {
  const r = spawnSync(engine, ["tokenize", "--tokenizer", tokenizerPath, "--json", "--special"], { input: text });
  if (r.status !== 0) throw new Error(`unmask-engine tokenize failed: ${r.stderr}`);
  return JSON.parse(r.stdout.toString()).ids;
}

const verses = fs.readFileSync(textPath, "utf8").split("\n").filter((l) => l.length > 0)
  .map((l) => l.slice(l.indexOf(" ") + 1));
const texts = [verses.join("\n")];
texts.push("<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat does Genesis 1:1 say?<|eot_id|>" +
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
texts.push("  Two spaces, tabs\tand\nnewlines; digits 1234 and ünïcödé — “quotes” 's 've.");
let checked = 0;
for (const text of texts) {
  const expected = tok.encode(text).ids;
  const actual = unmaskIds(text);
  if (JSON.stringify(expected) !== JSON.stringify(actual)) {
    console.error(`ids differ for ${JSON.stringify(text)}\n tokenizers.js: ${expected}\n unmask:        ${actual}`);
    process.exit(1);
  }
  const decoded = tok.decode(expected, { clean_up_tokenization_spaces: false });
  if (decoded !== text) {
    console.error(`tokenizers.js does not round-trip ${JSON.stringify(text)}: ${JSON.stringify(decoded)}`);
    process.exit(1);
  }
  ++checked;
}
console.log(`tokenizers.js and unmask agree on ${checked} texts (${verses.length} verses in the first)`);
