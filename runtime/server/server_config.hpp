#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/speculative/speculative_options.hpp"
#include "runtime/cache/cache_options.hpp"
#include "runtime/disk/disk_tier_options.hpp"
#include "runtime/remote/remote_disk.hpp"
#include "runtime/suffix/suffix_store.hpp"
#include "runtime/tiers/spill_options.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/http/http_limits.hpp"

namespace anchorage {

// Everything the server reads at start. Flags keep the seed's spelling; `--config FILE.json`
// sets the same keys (without the dashes, e.g. {"port": 8081, "served-model-name": "x"});
// flags given on the command line win over the file.
struct server_config {
  engine_options engine;
  // Not a flag: a model configuration that replaces engine's preset (tests build layouts no
  // preset has). model() is the one in use.
  std::optional<model_config> model_override;
  std::string tokenizer_path;  // --tokenizer PATH: a tokenizer.json; empty: the byte tokenizer
  // --chat-template auto|builtin|qwen3.5|qwen3|PATH.jinja: the template prompts are rendered with
  // (auto: the checkpoint's, else one beside --tokenizer, else the built-in; template_choice.hpp).
  std::string chat_template = "auto";
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string served_model_name = "anchorage";
  std::string admin_token;  // --admin-token, or ANCHORAGE_ADMIN_TOKEN
  std::string cache_dir;    // --cache-dir: the NVMe tiers' directory; empty: no disk tier
  // The disk tier's options, held whole as the tier takes them (runtime/disk/disk_tier_options.hpp):
  // --disk-cache-gb 50 (0: off), --disk-lifetime-days 7, --disk-free-gb 4 in store.eviction;
  // --disk-min-tokens in admission; --disk-stage-gb 1; --generation-checkpoint-tokens (0: off).
  // The folder (store.dir) is <--cache-dir>/disk, set when the tier starts.
  disk_tier_options disk;
  // The shared tier below the disk tier (docs/SCALE_OUT.md): --remote-cache
  // redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (empty: off; needs the disk tier), --cache-salt
  // (the tenant's: two salts never share a record), --remote-timeout-ms (2000: Redis's reply
  // timeout and a fetch's deadline). remote.redis.ns is remote_namespace(cache_salt), set at start.
  std::string remote_cache;
  std::string cache_salt;
  remote_tier_options remote;
  // The session spill (docs/SPILL.md): whole conversations to --cache-dir at a planned stop and
  // before an eviction.
  struct spill_knobs {
    bool enabled = true;        // --session-spill on|off (on whenever --cache-dir is set)
    bool reader_thread = true;  // --spill-reader thread|board
    // Held whole as the keeper takes them: --session-spill-gb 40, --spill-min-tokens 16384; the
    // folder (store.dir) is <--cache-dir>/disk, set when the spill starts.
    spill_options store;
  } spill;
  // --vision-encoder thread|board: where a request's images are encoded (docs/IMAGES.md): on the
  // vision encoder's own thread while the other slots run, or on the board's (for comparisons).
  bool vision_encoder_thread = true;
  // The persistent suffix store (docs/SUFFIX_STORE.md): the ids of every finished request in an
  // append-only log the lookup drafter asks, in <--cache-dir>/suffix or a user directory
  // (suffix_store_dir below).
  struct suffix_knobs {
    bool enabled = true;  // --suffix-store on|off
    // Held whole as the store takes them: --suffix-store-mb 192 (cap_bytes); the folder and the
    // tokenizer's digest are set when the store starts (suffix_store_dir below).
    suffix_store_options store;
  } suffix;
  bool compaction =
      true;  // --compaction on|off: a compaction request as the held conversation's continuation
  // The compaction worker: after --compaction-idle-s (30; 0: no worker) without a request, the
  // summary of an opencode conversation of at least --compaction-min-tokens (32768) up to its
  // end anchor is written ahead, --compaction-max-tokens (2048) long.
  double compaction_idle_s = 30;
  std::size_t compaction_min_tokens = 32768;
  long compaction_max_tokens = 2048;
  // --speculative off|mtp|lookup|mtp+lookup, --draft-max N (docs/SPECULATIVE.md).
  speculative_options speculative;
  bool no_cache = false;  // --no-cache: every tier off, the cold path only
  cache_options cache;    // --resident-gb, --end-anchor, --end-align, --cache-budget-gb, --store-entry-gb,
                          // --response-cache-mb
  int max_queue = 16;     // requests waiting beyond the running one; past it: 429
  // --memory-trim-s: seconds between handing the allocator's free pages back to the system
  // (runtime/server/memory_trim.hpp; 0: never).
  double memory_trim_s = 10;
  long max_body_bytes = 32L << 20;
  int decode_block = 4;        // tokens per decode message on the board
  long reasoning_budget = -1;  // --reasoning-budget: reasoning tokens before the server closes
                               // the block with a hidden phrase; -1 unlimited
  std::string ledger_path;     // --ledger FILE: one JSON line per request
  std::string trace_path;      // --trace FILE: record client requests as JSON lines
  http_limits http;            // the edge's connection limits: --http-* (runtime/http/http_limits.hpp)
  bool help = false;
  // The flags given at start (names without dashes), on the command line or in --config: a live
  // setting whose flag is here is pinned to it (runtime/server/live_settings.hpp).
  std::set<std::string> flags_given;

  model_config model() const { return model_override ? *model_override : engine.config(); }
};

// Parses argv (argv[0] skipped). Throws std::invalid_argument naming the flag for an unknown
// flag, a missing value or a bad value; the message suits a user.
server_config parse_server_args(const std::vector<std::string>& args);

// The --help text: every flag with its default.
std::string server_help();

// Where the suffix store lives: <--cache-dir>/suffix, else $XDG_CACHE_HOME/anchorage/suffix, else
// $HOME/.cache/anchorage/suffix. Empty when it is off (--suffix-store off, --no-cache, or neither
// variable set), and `why` then says so.
std::string suffix_store_dir(const server_config& cfg, std::string& why);

}  // namespace anchorage
