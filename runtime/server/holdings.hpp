#pragma once
// What a replica holds, for a balancer or an operator (GET /v1/cache/holdings, issue 28): the
// sessions whose conversations it holds (in a slot, or in its session spill) and the disk tier's
// prefixes, as hashes and token counts, never a token or a word of text.
//
//   {"sessions": [{"session", "keyed_by", "tokens", "end_anchor", "where", "slot" | "conversation"}],
//    "prefixes": {"total", "entries": [{"key", "tokens", "bytes", "hits"}]},
//    "shared": {"enabled", "namespace"}}
//
// `session` is the 16 hex digits of the XXH3-64 (seed 0) of the session id the client sent (the
// value of its session header, e.g. opencode's x-session-affinity or Claude Code's
// x-claude-code-session-id, or its prompt_cache_key), so a balancer can hash a request's header
// and look it up; `keyed_by` says which ("header", "prompt_cache_key"). A conversation whose
// client sent no id ("keyed_by": "messages" or "head", the server's own digest) is listed
// with "session": null. `where` is "slot" (a
// slot's resident rows, `slot` its number) or "spill" (`conversation`: the spill's 16-hex id).
// `prefixes` is the disk tier's anchors, most valuable first (their keys: the prefix hashes the
// files are named by); `shared` is the remote level's switch and key namespace (a digest).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace anchorage {

// 16 hex digits of XXH3-64 (seed 0) of `session`.
std::string session_digest(const std::string& session);

// The holdings of `stats` (the /v1/cache/stats object) and `disk_entries` (the
// /v1/cache/disk/entries object; null without a disk tier).
nlohmann::json holdings_of(const nlohmann::json& stats, const nlohmann::json& disk_entries);

}  // namespace anchorage
