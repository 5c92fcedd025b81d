#include "tools/replay/trace_replay.hpp"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include "actors/server.hpp"
#include "runtime/server/ledger.hpp"
#include "runtime/server/server_config.hpp"
#include "runtime/server/trace.hpp"
#include "tools/replay/wire_outcome.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;

std::string text_of(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// JSON text of a value for a mismatch line; a long string is shown around `at`.
std::string shown(const json& v, std::size_t at, bool around) {
  if (!around || !v.is_string()) {
    std::string s = text_of(v);
    if (s.size() > 400) s = s.substr(0, 400) + "...";
    return s;
  }
  const auto& s = v.get_ref<const std::string&>();
  const std::size_t from = at > 40 ? at - 40 : 0;
  std::string part = s.substr(std::min(from, s.size()), 100);
  std::string out = text_of(json(part));
  if (from > 0) out.insert(1, "...");
  if (from + 100 < s.size()) out.insert(out.size() - 1, "...");
  return out;
}

std::string difference(const std::string& field, const json& expected, const json& actual) {
  if (expected.is_string() && actual.is_string()) {
    const auto& a = expected.get_ref<const std::string&>();
    const auto& b = actual.get_ref<const std::string&>();
    if (a.size() > 120 || b.size() > 120) {
      std::size_t k = 0;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
      return field + ": differs at byte " + std::to_string(k) + " (lengths " + std::to_string(a.size()) +
             " and " + std::to_string(b.size()) + "): expected " + shown(expected, k, true) + ", got " +
             shown(actual, k, true);
    }
  }
  return field + ": expected " + shown(expected, 0, false) + ", got " + shown(actual, 0, false);
}

// Appends one line per difference between `expected` and `actual` below `field`; keys in
// `skip` (top level only) are not compared.
void compare(const std::string& field, const json& expected, const json& actual,
             std::vector<std::string>& out, const std::set<std::string>& skip = {}) {
  if (expected.is_object() && actual.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      if (skip.count(key)) continue;
      const std::string sub = field + "." + key;
      if (!actual.contains(key))
        out.push_back(sub + ": expected " + shown(value, 0, false) + ", got nothing");
      else
        compare(sub, value, actual.at(key), out);
    }
    for (const auto& [key, value] : actual.items()) {
      if (skip.count(key) || expected.contains(key)) continue;
      out.push_back(field + "." + key + ": expected nothing, got " + shown(value, 0, false));
    }
    return;
  }
  if (expected.is_array() && actual.is_array() && expected.size() == actual.size()) {
    for (std::size_t i = 0; i < expected.size(); ++i)
      compare(field + "[" + std::to_string(i) + "]", expected[i], actual[i], out);
    return;
  }
  // Numbers compare by value whatever their JSON type (1 and 1.0 are the same count).
  if (expected.is_number() && actual.is_number() && expected.get<double>() == actual.get<double>()) return;
  if (expected != actual) out.push_back(difference(field, expected, actual));
}

json usage_from(const json& u) {
  json out = {{"prompt_tokens", nullptr}, {"completion_tokens", nullptr}, {"cached_tokens", nullptr}};
  if (!u.is_object()) return out;
  if (u.contains("prompt_tokens")) out["prompt_tokens"] = u["prompt_tokens"];
  if (u.contains("completion_tokens")) out["completion_tokens"] = u["completion_tokens"];
  if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object() &&
      u["prompt_tokens_details"].contains("cached_tokens"))
    out["cached_tokens"] = u["prompt_tokens_details"]["cached_tokens"];
  return out;
}

json usage_from_ledger(const json& l) {
  const long prompt = l.value("prompt_tokens", 0L);
  return {{"prompt_tokens", prompt},
          {"completion_tokens", l.value("output_tokens", 0L)},
          {"cached_tokens", prompt - l.value("prefilled", 0L)}};
}

std::string str_or_empty(const json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

// The generation's own finish reason from what a chat client sees (chat_finish_reason's inverse:
// the generation itself never says "tool_calls").
json chat_reason(const json& seen, bool has_calls) {
  if (seen.is_string() && seen.get<std::string>() == "tool_calls" && has_calls) return "stop";
  return seen;
}

// The id an object carries: its own, or its message's (Anthropic's message_start) or its
// response's (the Responses events).
std::string id_in(const json& j) {
  if (!j.is_object()) return "";
  if (j.contains("id") && j["id"].is_string()) return j["id"].get<std::string>();
  for (const char* inner : {"message", "response"})
    if (j.contains(inner) && j[inner].is_object() && j[inner].contains("id") && j[inner]["id"].is_string())
      return j[inner]["id"].get<std::string>();
  return "";
}

// The id a response carries: the body's, or the first event's that has one.
std::string response_id(const std::string& body, bool sse) {
  if (!sse) return id_in(json::parse(body, nullptr, false));
  for (const std::string& data : sse_payloads(body)) {
    const std::string id = id_in(json::parse(data, nullptr, false));
    if (!id.empty()) return id;
  }
  return "";
}

request_kind kind_of(replay_wire w) {
  return w == replay_wire::completions ? request_kind::completion : request_kind::chat;
}

// What came back, read the way its wire writes it.
json outcome_from_body(replay_wire w, int status, const std::string& body) {
  if (w == replay_wire::messages) return messages_outcome_from_body(status, body);
  if (w == replay_wire::responses) return responses_outcome_from_body(status, body);
  return replay_outcome_from_body(kind_of(w), status, body);
}

json outcome_from_sse(replay_wire w, const std::string& sse, const json& ledger) {
  if (w == replay_wire::messages) return messages_outcome_from_sse(sse);
  if (w == replay_wire::responses) return responses_outcome_from_sse(sse);
  return replay_outcome_from_sse(kind_of(w), sse, ledger);
}

// The ledger entry with `id` from the stats route; null when none comes within about a second.
json find_ledger(httplib::Client& cli, const std::string& id) {
  if (id.empty()) return json();
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (auto res = cli.Get("/v1/cache/stats"); res && res->status == 200) {
      const json stats = json::parse(res->body, nullptr, false);
      if (stats.is_object() && stats.contains("ledger") && stats["ledger"].is_array())
        for (const auto& e : stats["ledger"])
          if (e.is_object() && e.value("id", std::string()) == id) return e;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return json();
}

}  // namespace

json replay_outcome_from_body(request_kind kind, int status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (status != 200) {
    if (j.is_discarded()) return {{"status", status}, {"type", nullptr}, {"message", body}};
    return replay_error_outcome(status, j);
  }
  const json choice =
      j.is_object() && j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()
          ? j["choices"][0]
          : json::object();
  json out;
  out["status"] = 200;
  if (kind == request_kind::completion) {
    out["finish_reason"] = choice.value("finish_reason", json());
    out["text"] = str_or_empty(choice.value("text", json()));
  } else {
    const json msg = choice.value("message", json::object());
    json calls = json::array();
    if (msg.contains("tool_calls") && msg["tool_calls"].is_array())
      for (const auto& c : msg["tool_calls"]) {
        const json f = c.is_object() ? c.value("function", json::object()) : json::object();
        calls.push_back({{"name", str_or_empty(f.value("name", json()))},
                         {"arguments", str_or_empty(f.value("arguments", json()))}});
      }
    out["finish_reason"] = chat_reason(choice.value("finish_reason", json()), !calls.empty());
    out["content"] = str_or_empty(msg.value("content", json()));
    out["reasoning"] = str_or_empty(msg.value("reasoning_content", json()));
    out["tool_calls"] = std::move(calls);
  }
  out["usage"] = usage_from(j.is_object() ? j.value("usage", json()) : json());
  return out;
}

json replay_outcome_from_sse(request_kind kind, const std::string& sse, const json& ledger) {
  std::string text, content, reasoning;
  json calls = json::array();
  json finish, usage;
  for (const std::string& data : sse_payloads(sse)) {
    if (data == "[DONE]") break;
    const json chunk = json::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (chunk.contains("error")) return replay_error_outcome(0, chunk);
    if (chunk.contains("usage") && chunk["usage"].is_object()) usage = usage_from(chunk["usage"]);
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) continue;
    for (const auto& choice : chunk["choices"]) {
      if (!choice.is_object()) continue;
      if (choice.contains("finish_reason") && !choice["finish_reason"].is_null())
        finish = choice["finish_reason"];
      if (kind == request_kind::completion) {
        text += str_or_empty(choice.value("text", json()));
        continue;
      }
      const json delta = choice.value("delta", json::object());
      if (!delta.is_object()) continue;
      content += str_or_empty(delta.value("content", json()));
      reasoning += str_or_empty(delta.value("reasoning_content", json()));
      if (delta.contains("tool_calls") && delta["tool_calls"].is_array())
        for (const auto& c : delta["tool_calls"]) {
          const std::size_t index = c.is_object() ? c.value("index", std::size_t{0}) : 0;
          while (calls.size() <= index) calls.push_back({{"name", ""}, {"arguments", ""}});
          const json f = c.is_object() ? c.value("function", json::object()) : json::object();
          calls[index]["name"] =
              calls[index]["name"].get<std::string>() + str_or_empty(f.value("name", json()));
          calls[index]["arguments"] =
              calls[index]["arguments"].get<std::string>() + str_or_empty(f.value("arguments", json()));
        }
    }
  }
  json out;
  out["status"] = 200;
  if (kind == request_kind::completion) {
    out["finish_reason"] = finish;
    out["text"] = text;
  } else {
    out["finish_reason"] = chat_reason(finish, !calls.empty());
    out["content"] = content;
    out["reasoning"] = reasoning;
    out["tool_calls"] = calls;
  }
  if (!usage.is_null())
    out["usage"] = usage;
  else if (ledger.is_object())
    out["usage"] = usage_from_ledger(ledger);
  // else: no usage to compare (the missing ledger entry is reported on its own)
  return out;
}

json to_json(const replay_report& r) {
  return {{"trace", r.trace},
          {"requests", r.requests},
          {"ok", r.ok()},
          {"mismatches", r.mismatches},
          {"seconds", r.seconds}};
}

replay_report replay_trace(const std::string& path, const std::vector<std::string>& extra_flags) {
  const auto t0 = std::chrono::steady_clock::now();
  replay_report report;
  report.trace = path;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the trace '" + path + "'");
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("the trace '" + path + "' is empty");
  const json header = json::parse(line, nullptr, false);
  if (!header.is_object() || header.value("trace", json()) != json(1))
    throw std::runtime_error("the trace '" + path +
                             "' does not start with a trace header ({\"trace\": 1, ...})");

  // A fresh server: no suffix store carried over from the user's cache directory (the extra
  // flags may turn it on, with a --cache-dir).
  std::vector<std::string> args = {"--port", "0", "--suffix-store", "off"};
  auto flag = [&](const char* key, const char* name) {
    if (!header.contains(key)) return;
    const json& v = header[key];
    args.push_back(name);
    args.push_back(v.is_string() ? v.get<std::string>() : text_of(v));
  };
  flag("preset", "--preset");
  flag("prefix-chunk", "--prefix-chunk");
  flag("ctx-size", "--ctx-size");
  flag("weights-seed", "--weights-seed");
  flag("served-model-name", "--served-model-name");
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  server_config cfg;
  try {
    cfg = parse_server_args(args);
  } catch (const std::exception& e) {
    throw std::runtime_error("the trace '" + path + "': cannot configure the server: " + e.what());
  }
  cfg.host = "127.0.0.1";

  std::unique_ptr<server> srv;
  int port = 0;
  try {
    srv = std::make_unique<server>(cfg);
    port = srv->start();
  } catch (const std::exception& e) {
    throw std::runtime_error("the trace '" + path + "': cannot start the server: " + e.what());
  }
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(600);
  cli.set_write_timeout(60);

  long line_no = 1;
  std::size_t index = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::size_t i = index++;
    ++report.requests;
    const json rec = json::parse(line, nullptr, false);
    std::string where = "request " + std::to_string(i) + " (line " + std::to_string(line_no);
    if (!rec.is_object() || !rec.contains("route") || !rec["route"].is_string() || !rec.contains("body") ||
        !rec.contains("outcome")) {
      report.mismatches.push_back(where + "): not a trace request line (JSON with route, body and outcome)");
      continue;
    }
    const std::string http_path = rec["route"].get<std::string>();
    where += ", " + http_path + "): ";
    const replay_wire wire = wire_of_path(http_path);
    const json& body = rec["body"];
    // A string body is the text the client sent when it was not JSON. The recorder also stores
    // a body that was a JSON string literal as that string: when the string is itself valid
    // JSON it cannot have been sent as is (it would have been recorded parsed), so it was the
    // literal. Otherwise the two cannot be told apart and the text is sent as is.
    // A request whose client left mid-stream cannot leave the same way again: skipped.
    if (rec["outcome"].is_object() && rec["outcome"].value("cancelled", false)) continue;
    std::string sent = text_of(body);
    if (body.is_string() && !json::accept(body.get_ref<const std::string&>())) sent = body.get<std::string>();
    // Without a seed of its own a request sampled with the server's fallback seed (its sequence
    // number there); send the seed it used, so the replay does not depend on arrival order.
    // (The agent wires have no seed: their requests sampled with the sequence number, which the
    // replay's order gives them again.)
    const bool seeded_wire = wire == replay_wire::chat || wire == replay_wire::completions;
    if (seeded_wire && body.is_object() && !body.contains("seed") && rec.contains("ledger") &&
        rec["ledger"].is_object() && rec["ledger"].contains("seed")) {
      json seeded = body;
      seeded["seed"] = rec["ledger"]["seed"];
      sent = seeded.dump();
    }

    auto res = cli.Post(http_path.c_str(), sent, "application/json");
    if (!res) {
      report.mismatches.push_back(where + "no response (" + httplib::to_string(res.error()) + ")");
      continue;
    }
    const bool sse = res->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0;
    const std::string id = res->status == 200 ? response_id(res->body, sse) : "";
    const json entry = find_ledger(cli, id);

    std::vector<std::string> diffs;
    // The messages wire re-dumps a call's arguments as a JSON object: the recorded ones compare
    // in that form.
    const json expected = wire == replay_wire::messages ? messages_view(rec["outcome"]) : rec["outcome"];
    if (sse) {
      const json actual = outcome_from_sse(wire, res->body, entry);
      std::set<std::string> skip;
      if (!actual.contains("status")) skip.insert("status");  // an error inside the stream
      if (!actual.contains("usage") && actual.contains("finish_reason")) skip.insert("usage");
      compare("outcome", expected, actual, diffs, skip);
    } else {
      compare("outcome", expected, outcome_from_body(wire, res->status, res->body), diffs);
    }

    const json expected_ledger = rec.value("ledger", json());
    json actual_ledger;
    if (entry.is_object()) {
      try {
        actual_ledger = trace_ledger(ledger_entry_from_json(entry));
      } catch (const std::exception& e) {
        diffs.push_back(std::string("ledger: the stats route's entry cannot be read: ") + e.what());
      }
    }
    if (!expected_ledger.is_null() || !actual_ledger.is_null()) {
      if (expected_ledger.is_null())
        diffs.push_back("ledger: expected nothing, got " + shown(actual_ledger, 0, false));
      else if (actual_ledger.is_null())
        diffs.push_back("ledger: expected " + shown(expected_ledger, 0, false) + ", got nothing" +
                        (id.empty() ? " (the response carries no id)" : " (no entry with id " + id + ")"));
      else
        compare("ledger", expected_ledger, actual_ledger, diffs);
    }
    for (auto& d : diffs) report.mismatches.push_back(where + d);
  }
  srv->stop();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace anchorage
