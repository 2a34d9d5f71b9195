// Encodes the verse texts of TEXT_FILE (as one text, one verse per line), a rendered chat turn and
// a string of awkward characters with Hugging Face's tokenizers.js and with `unmask-engine
// tokenize --jsonl` (all texts through one process), and fails on the first difference
// in ids or in the text the ids decode back to (tokenizers.js's and unmask's `detokenize`).
// GOLDEN_JSON (optional): a golden file whose cases[].text are checked too (gpt2.golden.json's
// texts: spaces, digits, CJK, emoji, special-token strings, random mixes).
// --slow-layout=TOKENIZER_CONFIG: unmask reads the tokenizer as a checkpoint that ships a slow
// tokenizer's files instead (Dream-v0's layout): a temporary directory with TOKENIZER_JSON's
// vocabulary and merges as vocab.json and merges.txt, and TOKENIZER_CONFIG as
// tokenizer_config.json; tokenizers.js reads TOKENIZER_JSON with that config's added tokens added,
// as transformers converts the slow files. Texts with those added tokens are checked too.
//   node compare.mjs TOKENIZER_JSON TEXT_FILE UNMASK_ENGINE [GOLDEN_JSON] [--slow-layout=CONFIG]
import { Tokenizer } from "@huggingface/tokenizers";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const slowFlag = process.argv.find((a) => a.startsWith("--slow-layout="));
const [tokenizerPath, textPath, engine, goldenPath] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
if (!engine) {
  console.error("usage: node compare.mjs TOKENIZER_JSON TEXT_FILE UNMASK_ENGINE [GOLDEN_JSON] [--slow-layout=CONFIG]");
  process.exit(2);
}
const tokenizerJson = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
let unmaskTokenizer = tokenizerPath;
const extraTexts = [];
if (slowFlag) {
  const configPath = slowFlag.slice("--slow-layout=".length);
  const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "unmask-slow-layout-"));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "vocab.json"), JSON.stringify(tokenizerJson.model.vocab));
  const merges = tokenizerJson.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  fs.writeFileSync(path.join(dir, "merges.txt"), "#version: 0.2\n" + merges.join("\n") + "\n");
  fs.copyFileSync(configPath, path.join(dir, "tokenizer_config.json"));
  unmaskTokenizer = dir;
  const known = new Set(tokenizerJson.added_tokens.map((t) => t.id));
  for (const [id, t] of Object.entries(config.added_tokens_decoder)) {
    if (known.has(Number(id))) continue;
    tokenizerJson.added_tokens.push({ id: Number(id), ...t });
    extraTexts.push(`x${t.content}${t.content} y${t.content}\n`);
  }
  if (extraTexts.length === 0) throw new Error(`${configPath} adds no token to ${tokenizerPath}`);
}
const tok = new Tokenizer(tokenizerJson, {});

// All texts through one process each way (`--jsonl`: one JSON value per line).
function unmask(command, inputs, extra) {
  const input = inputs.map((v) => JSON.stringify(v) + "\n").join("");
  const r = spawnSync(engine, [command, "--tokenizer", unmaskTokenizer, "--jsonl", ...extra], { input, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`unmask-engine ${command} failed: ${r.stderr}`);
  return r.stdout.toString().split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

const verses = fs.readFileSync(textPath, "utf8").split("\n").filter((l) => l.length > 0)
  .map((l) => l.slice(l.indexOf(" ") + 1));
const texts = [verses.join("\n")];
texts.push("<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat does Genesis 1:1 say?<|eot_id|>" +
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
texts.push("  Two spaces, tabs\tand\nnewlines; digits 1234 and ünïcödé — “quotes” 's 've.");
if (goldenPath) for (const c of JSON.parse(fs.readFileSync(goldenPath, "utf8")).cases) texts.push(c.text);
texts.push(...extraTexts);
const ourIds = unmask("tokenize", texts, ["--special"]).map((r) => r.ids);
const ourTexts = unmask("detokenize", ourIds, []).map((r) => r.text);
let checked = 0;
texts.forEach((text, i) => {
  const expected = tok.encode(text).ids;
  const actual = ourIds[i];
  if (JSON.stringify(expected) !== JSON.stringify(actual)) {
    console.error(`ids differ for ${JSON.stringify(text)}\n tokenizers.js: ${expected}\n unmask:        ${actual}`);
    process.exit(1);
  }
  // tokenizers.js refuses to decode an empty list; its text is the empty text.
  const decoded = expected.length === 0 ? "" : tok.decode(expected, { clean_up_tokenization_spaces: false });
  if (decoded !== text) {
    console.error(`tokenizers.js does not round-trip ${JSON.stringify(text)}: ${JSON.stringify(decoded)}`);
    process.exit(1);
  }
  if (ourTexts[i] !== decoded) {
    console.error(`decoded texts differ for ${JSON.stringify(text)}\n tokenizers.js: ${JSON.stringify(decoded)}\n unmask:        ${JSON.stringify(ourTexts[i])}`);
    process.exit(1);
  }
  ++checked;
});
console.log(`tokenizers.js and unmask agree on ${checked} texts (${verses.length} verses in the first)` +
            (slowFlag ? `, unmask reading vocab.json + merges.txt + ${slowFlag.slice(14)}` : ""));
