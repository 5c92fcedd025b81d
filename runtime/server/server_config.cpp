#include "runtime/server/server_config.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>

namespace anchorage {
namespace {

struct option {
  const char* name;   // without dashes
  const char* value;  // placeholder, nullptr for a switch
  const char* help;
  std::function<void(server_config&, const std::string&)> set;
};

long parse_long(const std::string& name, const std::string& v, long lo, long hi) {
  std::size_t used = 0;
  long x = 0;
  try {
    x = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || x < lo || x > hi)
    throw std::invalid_argument("--" + name + " wants an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + v + "'");
  return x;
}

bool parse_bool(const std::string& name, const std::string& v) {
  if (v == "true" || v == "1" || v == "on" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "off") return false;
  throw std::invalid_argument("--" + name + " is a switch (true/false), got '" + v + "'");
}

// A number from 0 to `most` (fractions allowed); `wants` says what the flag takes.
double parse_amount(const std::string& name, const std::string& v, double most, const std::string& wants) {
  std::size_t used = 0;
  double x = -1;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || !(x >= 0) || x > most)
    throw std::invalid_argument("--" + name + " wants " + wants + ", got '" + v + "'");
  return x;
}

// A size in GiB (fractions allowed, e.g. 0.25) as bytes.
std::size_t parse_gib(const std::string& name, const std::string& v) {
  return static_cast<std::size_t>(parse_amount(name, v, 1e6, "a size in GiB (e.g. 2 or 0.5)") * 1073741824.0);
}

// A size in MiB above 0 (fractions allowed) as bytes.
std::uint64_t parse_positive_mib(const std::string& name, const std::string& v) {
  const std::string wants = "a size in MiB above 0 (e.g. 192 or 0.5)";
  const double x = parse_amount(name, v, 1e7, wants);
  if (!(x > 0)) throw std::invalid_argument("--" + name + " wants " + wants + ", got '" + v + "'");
  return static_cast<std::uint64_t>(x * 1048576.0);
}

// A duration in seconds (fractions allowed, e.g. 0.2), at most a day.
double parse_seconds(const std::string& name, const std::string& v) {
  return parse_amount(name, v, 86400, "seconds from 0 to 86400 (e.g. 30 or 0.5)");
}

void set_engine(server_config& c, const std::string& flag, const std::string& v) { c.engine.parse(flag, v); }

const std::vector<option>& options() {
  static const std::vector<option> all = {
      {"host", "ADDR", "address to listen on (127.0.0.1)",
       [](server_config& c, const std::string& v) { c.host = v; }},
      {"port", "N", "port to listen on (8080)",
       [](server_config& c, const std::string& v) {
         c.port = static_cast<int>(parse_long("port", v, 0, 65535));
       }},
      {"model", "PATH",
       "a checkpoint: a Hugging Face directory or a GGUF file of Qwen3.5 (dense; F32, F16, BF16, Q8_0, "
       "Q4_0, Q4_K, Q5_K, Q6_K)",
       [](server_config& c, const std::string& v) { set_engine(c, "--model", v); }},
      {"preset", "NAME",
       "built-in model: tiny, tiny-mtp, small, small-mtp, qwen35-tiny, qwen35-tiny-mtp, qwen35-small (small)",
       [](server_config& c, const std::string& v) { set_engine(c, "--preset", v); }},
      {"weights", "FILE", "safetensors weights of the preset's layout (random weights otherwise)",
       [](server_config& c, const std::string& v) { set_engine(c, "--weights", v); }},
      {"weights-seed", "N", "seed of the random weights (1)",
       [](server_config& c, const std::string& v) { set_engine(c, "--weights-seed", v); }},
      {"prefix-chunk", "N", "the grid: prefill chunk in tokens (preset's: 1024 for small)",
       [](server_config& c, const std::string& v) { set_engine(c, "--prefix-chunk", v); }},
      {"ctx-size", "N", "context capacity in tokens (preset's: 131072 for small)",
       [](server_config& c, const std::string& v) { set_engine(c, "--ctx-size", v); }},
      {"device", "DEV", "cpu, cuda or auto (cpu)",
       [](server_config& c, const std::string& v) { set_engine(c, "--device", v); }},
      {"weight-storage", "MODE",
       "stored: a checkpoint's BF16, F16 and quantized matrices kept as the file stores them; f32: "
       "converted to float32 at load (stored)",
       [](server_config& c, const std::string& v) { set_engine(c, "--weight-storage", v); }},
      {"threads", "N", "cores the engine's products use (every core)",
       [](server_config& c, const std::string& v) { set_engine(c, "--threads", v); }},
      {"activations", "MODE",
       "products by Q8_0, Q4_0, Q4_K, Q5_K and Q6_K matrices: q8 rounds the activations to 8 bits (integer "
       "products, as llama.cpp; faster, but a session resume parts from a cold prefill more often), f32 "
       "keeps them; auto: q8 where the CPU has AVX-512 VNNI (f32)",
       [](server_config& c, const std::string& v) { set_engine(c, "--activations", v); }},
      {"vision-preset", "NAME",
       "none, tiny or small: a random vision tower beside a model that has none, for tests and "
       "benchmarks (none: the checkpoint's own, if any)",
       [](server_config& c, const std::string& v) { set_engine(c, "--vision-preset", v); }},
      {"vision-encoder", "thread|board",
       "where a request's images are encoded with a vision tower on the CPU: on the vision encoder's own "
       "thread while the other slots run (thread), or on the board's (board: the layout before it, for "
       "comparisons)",
       [](server_config& c, const std::string& v) {
         if (v != "thread" && v != "board")
           throw std::invalid_argument("--vision-encoder takes thread or board, not '" + v + "'");
         c.vision_encoder_thread = v == "thread";
       }},
      {"served-model-name", "NAME", "model id clients name (anchorage)",
       [](server_config& c, const std::string& v) { c.served_model_name = v; }},
      {"admin-token", "TOKEN", "token for admin routes (or ANCHORAGE_ADMIN_TOKEN)",
       [](server_config& c, const std::string& v) { c.admin_token = v; }},
      {"cache-dir", "DIR", "directory of the NVMe cache tiers; the disk tier is on when given (off)",
       [](server_config& c, const std::string& v) { c.cache_dir = v; }},
      {"disk-cache-gb", "GB", "budget of the disk tier's files under --cache-dir (50; 0: off)",
       [](server_config& c, const std::string& v) {
         c.disk.store.eviction.budget_bytes = parse_gib("disk-cache-gb", v);
       }},
      {"remote-cache", "URL",
       "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]: a Redis the replicas share below their disk tiers "
       "(needs --cache-dir; off)",
       [](server_config& c, const std::string& v) {
         const std::string why = parse_redis_url(v, c.remote.redis);
         if (!why.empty()) throw std::invalid_argument("--remote-cache: " + why);
         c.remote_cache = v;
       }},
      {"cache-salt", "TEXT",
       "the tenant's salt of the --remote-cache keys: two salts never share a record (none)",
       [](server_config& c, const std::string& v) { c.cache_salt = v; }},
      {"remote-timeout-ms", "MS", "Redis's reply timeout and a remote fetch's deadline (2000)",
       [](server_config& c, const std::string& v) {
         const int ms = static_cast<int>(parse_long("remote-timeout-ms", v, 10, 600000));
         c.remote.redis.timeout_ms = ms;
         c.remote.disk.fetch_deadline_ms = ms;
       }},
      {"disk-lifetime-days", "N", "days an unused disk entry is kept (7)",
       [](server_config& c, const std::string& v) {
         c.disk.store.eviction.lifetime_s = parse_long("disk-lifetime-days", v, 1, 36500) * 24 * 3600;
       }},
      {"disk-free-gb", "GB", "free space the disk tier always leaves to the file system (4)",
       [](server_config& c, const std::string& v) {
         c.disk.store.eviction.min_free_bytes = parse_gib("disk-free-gb", v);
       }},
      {"disk-min-tokens", "N", "shortest prompt the disk tier writes (4096)",
       [](server_config& c, const std::string& v) {
         c.disk.admission.min_tokens =
             static_cast<std::size_t>(parse_long("disk-min-tokens", v, 1, 1L << 30));
       }},
      {"disk-read-gbps", "GB/s",
       "the disk tier's read bandwidth assumed until a read measures it: a start whose read would take "
       "longer than prefilling its tokens is declined (1)",
       [](server_config& c, const std::string& v) {
         const std::string wants = "a bandwidth in GB/s above 0 (e.g. 2 or 0.5)";
         const double x = parse_amount("disk-read-gbps", v, 1e4, wants);
         if (!(x > 0)) throw std::invalid_argument("--disk-read-gbps wants " + wants + ", got '" + v + "'");
         c.disk.assumed_read_bytes_per_s = x * 1e9;
       }},
      {"generation-checkpoint-tokens", "N",
       "write a decoding generation's whole state to the disk tier every N output tokens, so an identical "
       "request after a restart resumes it (0: off)",
       [](server_config& c, const std::string& v) {
         c.disk.checkpoint_tokens =
             static_cast<std::size_t>(parse_long("generation-checkpoint-tokens", v, 0, 1L << 30));
       }},
      {"disk-stage-gb", "GB", "host memory holding staged disk writes not yet written (1)",
       [](server_config& c, const std::string& v) { c.disk.stage_bytes = parse_gib("disk-stage-gb", v); }},
      {"session-spill", "on|off",
       "keep whole live conversations under --cache-dir at a planned stop and before an eviction (on "
       "whenever --cache-dir is set)",
       [](server_config& c, const std::string& v) { c.spill.enabled = parse_bool("session-spill", v); }},
      {"session-spill-gb", "GB", "budget of the session spill's files under --cache-dir (40)",
       [](server_config& c, const std::string& v) {
         c.spill.store.budget_bytes = parse_gib("session-spill-gb", v);
       }},
      {"spill-min-tokens", "N",
       "shortest conversation an eviction spills when the park cannot hold it (16384)",
       [](server_config& c, const std::string& v) {
         c.spill.store.min_tokens = static_cast<std::size_t>(parse_long("spill-min-tokens", v, 1, 1L << 30));
       }},
      {"spill-reader", "thread|board",
       "where a request's spilled conversation is read and verified: on the spill reader's own thread while "
       "the other slots run (thread), or on the board's (board: the layout before issue 23, for comparisons)",
       [](server_config& c, const std::string& v) {
         if (v != "thread" && v != "board")
           throw std::invalid_argument("--spill-reader takes thread or board, not '" + v + "'");
         c.spill.reader_thread = v == "thread";
       }},
      {"suffix-store", "on|off",
       "keep every finished request's token ids in a persistent suffix store the lookup drafter asks, in "
       "<--cache-dir>/suffix or $XDG_CACHE_HOME/anchorage/suffix (on; off with --no-cache)",
       [](server_config& c, const std::string& v) { c.suffix.enabled = parse_bool("suffix-store", v); }},
      {"suffix-store-mb", "MB", "the suffix store's log at most; past it the oldest half is forgotten (192)",
       [](server_config& c, const std::string& v) {
         c.suffix.store.cap_bytes = parse_positive_mib("suffix-store-mb", v);
       }},
      {"compaction", "on|off",
       "serve a compaction request (opencode's) as the continuation of the conversation its session "
       "holds, reading only the new turn (on)",
       [](server_config& c, const std::string& v) { c.compaction = parse_bool("compaction", v); }},
      {"compaction-idle-s", "S",
       "seconds without a request before the compaction worker writes a summary ahead (30; 0: never)",
       [](server_config& c, const std::string& v) {
         c.compaction_idle_s = parse_seconds("compaction-idle-s", v);
       }},
      {"compaction-min-tokens", "N",
       "shortest opencode conversation (up to its end anchor) the worker writes a summary for (32768)",
       [](server_config& c, const std::string& v) {
         c.compaction_min_tokens =
             static_cast<std::size_t>(parse_long("compaction-min-tokens", v, 1, 1L << 30));
       }},
      {"compaction-max-tokens", "N", "the prewritten summary's length at most (2048)",
       [](server_config& c, const std::string& v) {
         c.compaction_max_tokens = parse_long("compaction-max-tokens", v, 1, 1L << 20);
       }},
      {"speculative", "off|mtp|lookup|mtp+lookup",
       "speculative decoding: verify rounds of the pending token and drafts from the model's draft layer "
       "(mtp), the request's own tokens and the suffix store (lookup), or both; the output is the same "
       "either way (off)",
       [](server_config& c, const std::string& v) {
         const auto m = parse_speculative_mode(v);
         if (!m)
           throw std::invalid_argument("--speculative wants off, mtp, lookup or mtp+lookup, got '" + v + "'");
         c.speculative.mode = *m;
       }},
      {"draft-max", "N", "drafted tokens a verify round forwards at most (8)",
       [](server_config& c, const std::string& v) {
         c.speculative.draft_max = static_cast<int>(parse_long("draft-max", v, 1, 64));
       }},
      {"no-cache", nullptr, "every cache tier off: the cold path only",
       [](server_config& c, const std::string& v) { c.no_cache = parse_bool("no-cache", v); }},
      {"resident-gb", "GB", "budget of the resident prefix's anchors and end anchor (2.5)",
       [](server_config& c, const std::string& v) { c.cache.resident_bytes = parse_gib("resident-gb", v); }},
      {"end-anchor", nullptr, "keep an anchor where each generation ends (on; --end-anchor=off)",
       [](server_config& c, const std::string& v) { c.cache.end_anchor = parse_bool("end-anchor", v); }},
      {"end-align", nullptr, "align whitespace runs next to hidden spans when resuming at the end (on)",
       [](server_config& c, const std::string& v) { c.cache.end_align = parse_bool("end-align", v); }},
      {"cache-budget-gb", "GB", "budget of the state store's snapshots (2)",
       [](server_config& c, const std::string& v) { c.cache.store_bytes = parse_gib("cache-budget-gb", v); }},
      {"store-entry-gb", "GB", "largest single snapshot in the state store (1)",
       [](server_config& c, const std::string& v) {
         c.cache.store_entry_bytes = parse_gib("store-entry-gb", v);
       }},
      {"resident-guest-max", "N",
       "longest prompt served as a guest beside the resident one (8192; 0: no guests)",
       [](server_config& c, const std::string& v) {
         c.cache.guest_max = static_cast<std::size_t>(parse_long("resident-guest-max", v, 0, 1L << 30));
       }},
      {"resident-stash-gb", "GB", "budget of a guest's stash of the rows it overwrites (1)",
       [](server_config& c, const std::string& v) {
         c.cache.stash_bytes = parse_gib("resident-stash-gb", v);
       }},
      {"resident-pin-gb", "GB", "budget of the pinned head of a replaced prompt (4)",
       [](server_config& c, const std::string& v) { c.cache.pin_bytes = parse_gib("resident-pin-gb", v); }},
      {"resident-park-gb", "GB", "budget of the parked session another session replaced (4)",
       [](server_config& c, const std::string& v) { c.cache.park_bytes = parse_gib("resident-park-gb", v); }},
      {"response-cache-mb", "N",
       "memory for the response cache: the tokens of an identical greedy request (temperature 0 or "
       "top_k 1), answered again without the engine (0: off)",
       [](server_config& c, const std::string& v) {
         c.cache.response_cache_bytes =
             static_cast<std::size_t>(parse_long("response-cache-mb", v, 0, 1L << 24)) << 20;
       }},
      {"image-cache-mb", "N",
       "memory for the vision encoder's output by image digest: an image a conversation sends "
       "every turn is encoded once (512)",
       [](server_config& c, const std::string& v) {
         c.cache.image_cache_bytes = static_cast<std::size_t>(parse_long("image-cache-mb", v, 0, 1L << 24))
                                     << 20;
       }},
      {"parallel", "N", "slots: requests served at once, each with its own rows and resident prefix (2)",
       [](server_config& c, const std::string& v) {
         c.cache.parallel = static_cast<int>(parse_long("parallel", v, 1, 64));
       }},
      {"max-queue", "N", "requests that may wait behind the running one (16); beyond: 429",
       [](server_config& c, const std::string& v) {
         c.max_queue = static_cast<int>(parse_long("max-queue", v, 0, 100000));
       }},
      {"max-body-mb", "N", "largest request body in MiB (32); beyond: 413",
       [](server_config& c, const std::string& v) {
         c.max_body_bytes = parse_long("max-body-mb", v, 1, 4096) << 20;
       }},
      {"decode-block", "N", "tokens decoded per board step (4)",
       [](server_config& c,
          const std::string&
              v) { c.decode_block = static_cast<int>(parse_long("decode-block", v, 1, 1024)); }},
      {"reasoning-budget", "N",
       "reasoning tokens a thinking chat may generate before the server closes the block (-1: unlimited)",
       [](server_config& c, const std::string& v) {
         c.reasoning_budget = parse_long("reasoning-budget", v, -1, 1L << 40);
       }},
      {"tokenizer", "PATH",
       "render and tokenize with the BPE tokenizer of a tokenizer.json (the engine's vocabulary must hold "
       "its "
       "ids; default: the byte tokenizer)",
       [](server_config& c, const std::string& v) { c.tokenizer_path = v; }},
      // The chat template (runtime/text/template/template_choice.hpp).
      {"chat-template", "NAME|PATH",
       "auto (the checkpoint's template, else one beside --tokenizer, else builtin), builtin, qwen3.5, "
       "qwen3, or a .jinja file; a template none of these recognise refuses the start (auto)",
       [](server_config& c, const std::string& v) {
         if (v.empty())
           throw std::invalid_argument("--chat-template wants auto, builtin, qwen3.5, qwen3 or a file");
         c.chat_template = v;
       }},
      {"ledger", "FILE", "append one JSON line per request to FILE",
       [](server_config& c, const std::string& v) { c.ledger_path = v; }},
      {"trace", "FILE", "record the client requests received, as JSON lines, to FILE",
       [](server_config& c, const std::string& v) { c.trace_path = v; }},
      // The edge's connection limits (runtime/http/http_limits.hpp, docs/EDGE.md).
      {"http-threads", "N",
       "HTTP workers for POST requests (64; at least --parallel + --max-queue + 4 are started, so the "
       "queue's 429 comes before the edge runs out of workers)",
       [](server_config& c, const std::string& v) {
         c.http.threads = static_cast<int>(parse_long("http-threads", v, 1, 4096));
       }},
      {"http-max-connections", "N", "open client connections (1024); beyond: 503 with Retry-After",
       [](server_config& c, const std::string& v) {
         c.http.max_connections = static_cast<int>(parse_long("http-max-connections", v, 1, 1L << 20));
       }},
      {"http-max-header-kb", "N", "largest request line and headers in KiB (16); beyond: 431",
       [](server_config& c, const std::string& v) {
         c.http.max_header_bytes = static_cast<std::size_t>(parse_long("http-max-header-kb", v, 1, 1024))
                                   << 10;
       }},
      {"http-header-timeout-s", "N", "seconds a client has to send a request's headers (10); beyond: 408",
       [](server_config& c, const std::string& v) {
         c.http.header_timeout_ms = parse_long("http-header-timeout-s", v, 1, 3600) * 1000;
       }},
      {"http-body-timeout-s", "N", "seconds a client has to send a request's body (60); beyond: 408",
       [](server_config& c, const std::string& v) {
         c.http.body_timeout_ms = parse_long("http-body-timeout-s", v, 1, 36000) * 1000;
       }},
      {"http-write-timeout-s", "N", "seconds an answer may wait on a client that does not read (30)",
       [](server_config& c, const std::string& v) {
         c.http.write_timeout_ms = parse_long("http-write-timeout-s", v, 1, 36000) * 1000;
       }},
      {"http-keepalive-s", "N", "seconds an idle keep-alive connection is kept (5)",
       [](server_config& c, const std::string& v) {
         c.http.keepalive_timeout_ms = parse_long("http-keepalive-s", v, 1, 3600) * 1000;
       }},
      {"http-keepalive-max", "N", "requests served on one connection before it is closed (100)",
       [](server_config& c, const std::string& v) {
         c.http.keepalive_max = static_cast<int>(parse_long("http-keepalive-max", v, 1, 1L << 20));
       }},
      {"memory-trim-s", "S",
       "seconds between handing the memory the allocator holds free back to the system, so the resident "
       "set follows what the caches hold (10; 0: never)",
       [](server_config& c, const std::string& v) { c.memory_trim_s = parse_seconds("memory-trim-s", v); }},
  };
  return all;
}

const option* find(const std::string& name) {
  for (const auto& o : options())
    if (name == o.name) return &o;
  return nullptr;
}

void apply_file(server_config& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--config: cannot read '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::invalid_argument("--config '" + path + "' is not JSON: " + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("--config '" + path + "' must hold a JSON object");
  for (const auto& [key, value] : j.items()) {
    const option* o = find(key);
    if (o == nullptr) throw std::invalid_argument("--config '" + path + "': unknown key '" + key + "'");
    std::string v;
    if (value.is_string())
      v = value.get<std::string>();
    else if (value.is_boolean())
      v = value.get<bool>() ? "true" : "false";
    else if (value.is_number_integer())
      v = std::to_string(value.get<long>());
    else if (value.is_number_float())
      v = value.dump();
    else
      throw std::invalid_argument("--config '" + path + "': key '" + key +
                                  "' must be a string, number or boolean");
    o->set(c, v);
    c.flags_given.insert(key);
  }
}

}  // namespace

server_config parse_server_args(const std::vector<std::string>& args) {
  server_config c;
  if (const char* t = std::getenv("ANCHORAGE_ADMIN_TOKEN")) c.admin_token = t;
  // the file first, so flags win whatever their order
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--config needs a file");
      apply_file(c, args[i + 1]);
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      c.help = true;
      continue;
    }
    if (a == "--config") {
      ++i;
      continue;
    }
    if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "' (see --help)");
    std::string value;
    bool inline_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    const option* o = find(a.substr(2));
    if (o == nullptr) throw std::invalid_argument("unknown flag " + a + " (see --help)");
    c.flags_given.insert(o->name);
    if (o->value == nullptr) {
      o->set(c, inline_value ? value : "true");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value (" + o->value + ")");
      value = args[++i];
    }
    o->set(c, value);
  }
  if (!c.remote_cache.empty() && !c.no_cache &&
      (c.cache_dir.empty() || c.disk.store.eviction.budget_bytes == 0))
    throw std::invalid_argument(
        "--remote-cache needs the disk tier (--cache-dir, --disk-cache-gb above 0): "
        "the shared tier sits below it");
  c.remote.redis.ns = remote_namespace(c.cache_salt);
  // Validates preset, grid and context now, not at the first request (a checkpoint's at load).
  if (!c.engine.model_path) c.engine.config();
  return c;
}

std::string server_help() {
  std::string s = "usage: anchorage [flags]\n\n";
  s += "  --config FILE.json   the same keys as the flags, without dashes; flags win\n";
  s += "  --help               this text\n";
  for (const auto& o : options()) {
    std::string left = std::string("  --") + o.name + (o.value ? std::string(" ") + o.value : "");
    if (left.size() < 23)
      left.resize(23, ' ');
    else
      left += "  ";
    s += left + o.help + "\n";
  }
  return s;
}

std::string suffix_store_dir(const server_config& cfg, std::string& why) {
  why.clear();
  if (!cfg.suffix.enabled) {
    why = "off (--suffix-store off)";
    return {};
  }
  if (cfg.no_cache) {
    why = "off (--no-cache)";
    return {};
  }
  if (!cfg.cache_dir.empty()) return cfg.cache_dir + "/suffix";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/anchorage/suffix";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/anchorage/suffix";
  why = "off (no --cache-dir, and neither XDG_CACHE_HOME nor HOME is set)";
  return {};
}

}  // namespace anchorage
