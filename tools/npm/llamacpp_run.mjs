#!/usr/bin/env node
// Runs a GGUF through llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU build) and prints JSON.
//
// Common flags: --threads N (default 1: ggml's spinning threads crawl on a shared, loaded machine),
// --kv-type f32|f16 (the attention cache; default f32, so that the comparison with Anchorage's float32
// cache is like for like; llama.cpp's own default is f16).
//
//   node llamacpp_run.mjs --model FILE.gguf --tokens IDS.json [--n-predict 32] [--out FILE]
//     Evaluates the token ids (a JSON array) as one prompt and writes
//       {"n_vocab", "prompt_tokens", "logprobs": [...], "logits_minus_max": [...], "tokens": [...], "log": [...]}
//     logprobs are the last position's log-softmax over the whole vocabulary. node-llama-cpp gives
//     no raw logits, only the softmax it computes from them in float32 (AddonContext.cpp, SampleToken);
//     log(p_i) - log(p_max) gives the logits back up to that rounding, shifted so the maximum is 0.
//     tokens are the greedy continuation (temperature 0, no repeat penalty) of n-predict tokens.
//
//   node llamacpp_run.mjs --model FILE.gguf --bench [--prefill 128,512] [--decode 64] [--decode-at 128]
//                         [--followup N] [--out FILE]
//     Times prefill (tokens/s of one prompt of each length, fresh context state each time) and
//     decode (tokens/s of greedy tokens after a 128-token prompt).
//
// Exits 2 with {"error": ...} when the model cannot be loaded or run.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const a = { nPredict: 32, threads: 1, kvType: "F32", prefill: [128, 512], decode: 64, decodeAt: 128, followup: 0, bench: false };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === "--model") a.model = v();
    else if (k === "--tokens") a.tokens = v();
    else if (k === "--out") a.out = v();
    else if (k === "--n-predict") a.nPredict = Number(v());
    else if (k === "--threads") a.threads = Number(v());
    else if (k === "--kv-type") a.kvType = v().toUpperCase();
    else if (k === "--bench") a.bench = true;
    else if (k === "--prefill") a.prefill = v().split(",").map(Number);
    else if (k === "--decode") a.decode = Number(v());
    else if (k === "--decode-at") a.decodeAt = Number(v());
    else if (k === "--followup") a.followup = Number(v());
    else throw new Error(`unknown flag ${k}`);
  }
  if (!a.model) throw new Error("--model is required");
  if (!a.bench && !a.tokens) throw new Error("--tokens is required (or --bench)");
  return a;
}

function emit(args, obj) {
  const text = JSON.stringify(obj);
  if (args && args.out) fs.writeFileSync(args.out, text + "\n");
  else process.stdout.write(text + "\n");
}

async function openModel(args, log) {
  const { getLlama, LlamaLogLevel } = await import(path.join(here, "node_modules/node-llama-cpp/dist/index.js"));
  const llama = await getLlama({
    gpu: false,
    build: "never",
    logLevel: LlamaLogLevel.info,
    logger: (level, message) => log.push(`${level}: ${message.trimEnd()}`),
  });
  // The resident set once the libraries are loaded, before the model: what the model costs is
  // measured from here.
  const rssLibraries = process.memoryUsage().rss;
  const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
  return { llama, model, rssLibraries };
}

async function makeContext(model, args, tokens) {
  const size = Math.max(256, Math.ceil((tokens + 64) / 256) * 256);
  const options = {
    contextSize: size,
    // The whole prompt in one batch for the logit checks; the benches use llama.cpp's default
    // batch (2048), so a long prompt does not need a compute buffer of its size.
    batchSize: args.bench ? Math.min(Math.max(tokens, 32), 2048) : Math.max(tokens, 32),
    sequences: 1,
    threads: args.threads,
    experimentalKvCacheKeyType: args.kvType,
    experimentalKvCacheValueType: args.kvType,
  };
  return model.createContext(options);
}

async function run(args, log) {
  const ids = JSON.parse(fs.readFileSync(args.tokens, "utf8"));
  if (!Array.isArray(ids) || ids.length === 0) throw new Error(`${args.tokens}: expected a non-empty JSON array of ids`);
  const { model } = await openModel(args, log);
  const context = await makeContext(model, args, ids.length + args.nPredict);
  const sequence = context.getSequence();
  const tokens = [];
  let first = null;
  const it = sequence.evaluateWithMetadata(ids, { probabilities: true }, { temperature: 0 });
  for await (const out of it) {
    if (first === null) first = out.probabilities;
    tokens.push(out.token);
    if (tokens.length >= args.nPredict) break;
  }
  const nVocab = first.size;
  const logprobs = new Array(nVocab).fill(null);
  let pmax = 0;
  for (const [id, p] of first) {
    logprobs[id] = Math.log(p);
    pmax = Math.max(pmax, p);
  }
  const lmax = Math.log(pmax);
  return {
    model: args.model,
    n_vocab: nVocab,
    prompt_tokens: ids.length,
    logprobs,
    logits_minus_max: logprobs.map((l) => (l === null ? null : l - lmax)),
    tokens,
    log,
  };
}

async function bench(args, log) {
  const { model, rssLibraries } = await openModel(args, log);
  const rssLoaded = process.memoryUsage().rss - rssLibraries;
  const prompt = (n) => Array.from({ length: n }, (_, i) => (i * 7919 + 13) % 256);
  const prefill = [];
  for (const n of args.prefill) {
    const context = await makeContext(model, args, n);
    const sequence = context.getSequence();
    const t0 = process.hrtime.bigint();
    await sequence.evaluateWithoutGeneratingNewTokens(prompt(n));
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    prefill.push({ tokens: n, seconds: s, tokens_per_s: n / s });
    await context.dispose();
  }
  const at = args.decodeAt;
  const context = await makeContext(model, args, at + 1 + args.decode + args.followup + 1);
  const sequence = context.getSequence();
  await sequence.evaluateWithoutGeneratingNewTokens(prompt(at));
  // Each yield is one single-token decode step (the first one decodes the token given here).
  let count = 0;
  const t0 = process.hrtime.bigint();
  for await (const _ of sequence.evaluate([prompt(at + 1)[at]], { temperature: 0 })) {
    if (++count >= args.decode) break;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  // A follow-up turn continuing the same sequence (llama.cpp's own reuse): its new tokens, then
  // its first generated token.
  let followup = null;
  if (args.followup > 0) {
    const more = prompt(at + args.followup + 8).slice(-args.followup);
    const before = sequence.contextTokens.length;
    const f0 = process.hrtime.bigint();
    for await (const _ of sequence.evaluate(more, { temperature: 0 })) break;
    followup = { context: before, new_tokens: args.followup,
                 ttft_s: Number(process.hrtime.bigint() - f0) / 1e9 };
  }
  return {
    model: args.model,
    threads: args.threads,
    kv_type: args.kvType,
    resident_bytes_loaded: rssLoaded,
    prefill,
    decode: { context: at, tokens: args.decode, seconds: s, tokens_per_s: args.decode / s },
    followup,
    log: log.filter((l) => /model|type|params|backend|CPU/i.test(l)).slice(0, 80),
  };
}

const log = [];
let args = null;
try {
  args = parseArgs(process.argv.slice(2));
  emit(args, args.bench ? await bench(args, log) : await run(args, log));
  process.exit(0);
} catch (e) {
  emit(args, { error: String(e && e.stack ? e.stack : e), log });
  process.exit(2);
}
