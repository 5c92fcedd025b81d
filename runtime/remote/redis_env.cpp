#include "runtime/remote/redis_env.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

namespace anchorage {
namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "dir/name" into its two parts ("" and the path when there is no '/').
std::pair<std::string, std::string> split_path(const std::string& path) {
  const auto at = path.rfind('/');
  if (at == std::string::npos) return {"", path};
  return {path.substr(0, at), path.substr(at + 1)};
}

std::optional<std::uint64_t> to_u64(const char* s, std::size_t n) {
  if (n == 0 || n > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  return v;
}

// A field of INFO's text ("name:value\r\n"), as a number.
std::optional<std::uint64_t> info_field(const std::string& info, const std::string& name) {
  const std::string key = "\n" + name + ":";
  const auto at = ("\n" + info).find(key);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t from = at + key.size() - 1;
  std::size_t end = from;
  while (end < info.size() && info[end] >= '0' && info[end] <= '9') ++end;
  return to_u64(info.data() + from, end - from);
}

}  // namespace

std::string parse_redis_url(const std::string& url, redis_options& o) {
  const std::string scheme = "redis://";
  if (url.compare(0, scheme.size(), scheme) != 0) return "it does not start with redis://";
  std::string rest = url.substr(scheme.size());
  redis_options r = o;
  r.username.clear();
  r.password.clear();
  r.port = 6379;  // what the URL does not name is Redis's default
  r.db = 0;
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    const std::string user = rest.substr(0, at);
    const auto colon = user.find(':');
    if (colon == std::string::npos) return "the part before '@' is not [USER]:PASSWORD";
    r.username = user.substr(0, colon);
    r.password = user.substr(colon + 1);
    rest = rest.substr(at + 1);
  }
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    const std::string db = rest.substr(slash + 1);
    const auto v = to_u64(db.data(), db.size());
    if (!db.empty() && (!v || *v > 1000000)) return "the database '" + db + "' is not a number";
    r.db = v ? static_cast<int>(*v) : 0;
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string::npos && rest.find(']') == std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    const auto v = to_u64(port.data(), port.size());
    if (!v || *v == 0 || *v > 65535) return "the port '" + port + "' is not one";
    r.port = static_cast<int>(*v);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return "no host";
  r.host = rest;
  o = r;
  return "";
}

struct redis_env::reply {
  redisReply* r = nullptr;
  reply() = default;
  explicit reply(redisReply* p) : r(p) {}
  reply(reply&& o) noexcept : r(std::exchange(o.r, nullptr)) {}
  reply& operator=(reply&& o) noexcept {
    std::swap(r, o.r);
    return *this;
  }
  ~reply() {
    if (r) freeReplyObject(r);
  }
  explicit operator bool() const { return r != nullptr; }
  redisReply* operator->() const { return r; }
};

redis_env::redis_env(redis_options o) : opts_(std::move(o)) {
  if (opts_.part_bytes == 0) opts_.part_bytes = 4u << 20;
}

redis_env::~redis_env() { drop(); }

void redis_env::drop() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  armed_ms_ = -1;
}

int redis_env::call_timeout_ms() const {
  if (!deadline_) return opts_.timeout_ms;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now())
          .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, opts_.timeout_ms));
}

bool redis_env::arm(int ms) {
  if (ms == armed_ms_) return true;
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  if (redisSetTimeout(ctx_, tv) != REDIS_OK) return false;
  armed_ms_ = ms;
  return true;
}

file_result redis_env::connect() {
  if (ctx_) return file_result::success();
  const int ms = call_timeout_ms();
  if (ms == 0) return file_result::failure(ETIMEDOUT, "connect: past the caller's deadline");
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  ctx_ = redisConnectWithTimeout(opts_.host.c_str(), opts_.port, tv);
  const std::string where = "redis " + opts_.host + ":" + std::to_string(opts_.port);
  if (!ctx_) return file_result::failure(ENOMEM, "connect " + where + ": no context");
  if (ctx_->err) {
    const int err = errno != 0 ? errno : ECONNREFUSED;
    const std::string why = ctx_->errstr;
    drop();
    return file_result::failure(err, "connect " + where + ": " + why);
  }
  if (!arm(ms)) {
    drop();
    return file_result::failure(EIO, "set the timeout of " + where);
  }
  file_result e;
  if (!opts_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!opts_.username.empty()) auth.push_back(opts_.username);
    auth.push_back(opts_.password);
    if (!command(auth, e)) {
      drop();  // not ours to use unauthenticated
      return e;
    }
  }
  if (opts_.db != 0 && !command({"SELECT", std::to_string(opts_.db)}, e)) {
    drop();
    return e;
  }
  return file_result::success();
}

redis_env::reply redis_env::command(const std::vector<std::string>& args, file_result& error) {
  const std::string step = "redis " + args.front() + (args.size() > 1 ? " " + args[1] : "");
  if (!ctx_) {
    if (file_result c = connect(); !c) {
      error = c;
      return reply();
    }
  }
  const int ms = call_timeout_ms();
  if (ms == 0) {
    error = file_result::failure(ETIMEDOUT, step + ": past the caller's deadline (not sent)");
    return reply();
  }
  if (!arm(ms)) {
    error = file_result::failure(EIO, step + ": could not set the reply timeout");
    drop();
    return reply();
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  reply r(static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), lens.data())));
  if (!r) {
    int err = ctx_->err == REDIS_ERR_EOF ? ECONNRESET : errno != 0 ? errno : EIO;
    if (err == EAGAIN || err == EWOULDBLOCK) err = ETIMEDOUT;
    error = file_result::failure(err, step + ": " + ctx_->errstr);
    drop();  // the connection's state is unknown: dialled again next time
    return reply();
  }
  if (r->type == REDIS_REPLY_ERROR) {
    error = file_result::failure(EIO, step + ": " + std::string(r->str, r->len));
    return reply();
  }
  return r;
}

file_result redis_env::ping() {
  file_result e;
  reply r = command({"PING"}, e);
  return r ? file_result::success() : e;
}

file_result redis_env::write_atomic(const std::string& dir, const std::string& name,
                                    const std::vector<file_piece>& pieces) {
  const std::string tmp_name = name + tmp_suffix;
  const std::string tmp_key = file_key(join_path(dir, tmp_name));
  const std::string final_key = file_key(join_path(dir, name));
  const std::string set = dir_key(dir);
  std::uint64_t total = 0;
  for (const auto& p : pieces) total += p.second;
  file_result e;
  auto give_up = [&]() {
    file_result ignored;
    if (ctx_) command({"DEL", tmp_key}, ignored);
    if (ctx_) command({"SREM", set, tmp_name}, ignored);
    return e;
  };
  if (!command({"SADD", set, tmp_name}, e) || !command({"DEL", tmp_key}, e)) return give_up();
  // The parts, each copied out of the pieces into its own command.
  std::size_t piece = 0, within = 0;
  std::string part;
  for (std::uint64_t at = 0, index = 0; at < total; ++index) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(opts_.part_bytes, total - at));
    try {
      part.resize(want);
    } catch (const std::bad_alloc&) {
      e = file_result::failure(ENOMEM, "allocate a part of " + tmp_key);
      return give_up();
    }
    for (std::size_t got = 0; got < want;) {
      const auto& [data, bytes] = pieces[piece];
      const std::size_t n = std::min(want - got, bytes - within);
      if (n > 0) std::memcpy(&part[got], static_cast<const char*>(data) + within, n);
      got += n;
      within += n;
      if (within == bytes) {
        ++piece;
        within = 0;
      }
    }
    if (!command({"HSET", tmp_key, std::to_string(index), part}, e)) return give_up();
    at += want;
  }
  if (!command({"HSET", tmp_key, "n", std::to_string(total), "m", std::to_string(now_s())}, e))
    return give_up();
  // The tmp over the final key and the names swapped, at once.
  if (!command({"MULTI"}, e)) return give_up();
  const bool queued = command({"RENAME", tmp_key, final_key}, e) && command({"SREM", set, tmp_name}, e) &&
                      command({"SADD", set, name}, e);
  if (!queued) {
    file_result ignored;
    if (ctx_) command({"DISCARD"}, ignored);
    return give_up();
  }
  reply done = command({"EXEC"}, e);
  if (!done) return e;  // a lost reply: the rename may have happened, and the caller is told so
  if (done->type != REDIS_REPLY_ARRAY || done->elements != 3) {
    e = file_result::failure(EIO, "redis EXEC " + final_key + ": the transaction was not run");
    return give_up();
  }
  for (std::size_t i = 0; i < done->elements; ++i)
    if (done->element[i]->type == REDIS_REPLY_ERROR) {
      e = file_result::failure(EIO, "redis EXEC " + final_key + ": " + std::string(done->element[i]->str));
      return give_up();
    }
  return file_result::success();
}

file_result redis_env::read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) {
  const std::string key = file_key(path);
  const std::uint64_t p = opts_.part_bytes;
  // The size and every part the range touches in one command, so no rename falls between them.
  std::vector<std::string> args = {"HMGET", key, "n"};
  const std::uint64_t first = offset / p, last = n == 0 ? first : (offset + n - 1) / p;
  if (n > 0)
    for (std::uint64_t i = first; i <= last; ++i) args.push_back(std::to_string(i));
  file_result e;
  reply r = command(args, e);
  if (!r) return e;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != args.size() - 2)
    return file_result::failure(EIO, "redis HMGET " + key + ": an answer of another shape");
  const redisReply* size_field = r->element[0];
  if (size_field->type != REDIS_REPLY_STRING)
    return file_result::failure(ENOENT, "read " + key + ": no such file");
  const auto size = to_u64(size_field->str, size_field->len);
  if (!size) return file_result::failure(EIO, "read " + key + ": its size field is damaged");
  if (offset > *size || n > *size - offset)
    return file_result::failure(ERANGE, "read past the end (" + std::to_string(*size) + " bytes) of " + key);
  auto* out = static_cast<unsigned char*>(dst);
  for (std::uint64_t i = first; n > 0 && i <= last; ++i) {
    const redisReply* part = r->element[1 + (i - first)];
    const std::uint64_t part_from = i * p;
    const std::uint64_t expect = std::min<std::uint64_t>(p, *size - part_from);
    if (part->type != REDIS_REPLY_STRING || part->len != expect)
      return file_result::failure(EIO,
                                  "read " + key + ": part " + std::to_string(i) + " is missing or damaged");
    const std::uint64_t from = std::max(offset, part_from);
    const std::uint64_t to = std::min<std::uint64_t>(offset + n, part_from + expect);
    std::memcpy(out + (from - offset), part->str + (from - part_from), static_cast<std::size_t>(to - from));
  }
  return file_result::success();
}

std::optional<std::uint64_t> redis_env::size(const std::string& path) {
  file_result e;
  reply r = command({"HGET", file_key(path), "n"}, e);
  if (!r || r->type != REDIS_REPLY_STRING) return std::nullopt;
  return to_u64(r->str, r->len);
}

std::vector<std::string> redis_env::list(const std::string& dir) {
  file_result e;
  reply r = command({"SMEMBERS", dir_key(dir)}, e);
  std::vector<std::string> out;
  if (!r || r->type != REDIS_REPLY_ARRAY) return out;
  for (std::size_t i = 0; i < r->elements; ++i)
    if (r->element[i]->type == REDIS_REPLY_STRING) out.emplace_back(r->element[i]->str, r->element[i]->len);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<bool>> redis_env::has_names(const std::string& dir,
                                                      const std::vector<std::string>& names,
                                                      file_result& error) {
  std::vector<bool> out(names.size(), false);
  if (names.empty()) return out;
  std::vector<std::string> args{"SMISMEMBER", dir_key(dir)};
  args.insert(args.end(), names.begin(), names.end());
  reply r = command(args, error);
  if (!r) return std::nullopt;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != names.size()) {
    error = file_result::failure(EIO, "SMISMEMBER " + dir_key(dir) + ": an unexpected reply");
    return std::nullopt;
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    out[i] = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 1;
  return out;
}

bool redis_env::remove(const std::string& path) {
  const auto [dir, name] = split_path(path);
  file_result e;
  if (!command({"MULTI"}, e)) return false;
  if (!command({"DEL", file_key(path)}, e) || !command({"SREM", dir_key(dir), name}, e)) {
    file_result ignored;
    if (ctx_) command({"DISCARD"}, ignored);
    return false;
  }
  reply r = command({"EXEC"}, e);
  return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
         r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer > 0;
}

file_result redis_env::make_dir(const std::string& dir) {
  // A directory is the set its entries' names are in: each component's name goes into its
  // parent's set, so a listing shows subdirectories as POSIX's does (the disk tier's namespaces).
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  file_result e = ping();
  if (!e) return e;
  for (;;) {
    auto [parent, name] = split_path(d);
    if (parent.empty() || name.empty()) return file_result::success();
    if (!command({"SADD", dir_key(parent), name}, e)) return e;
    d = parent;
  }
}

std::optional<std::uint64_t> redis_env::free_bytes(const std::string&) {
  file_result e;
  reply r = command({"INFO", "memory"}, e);
  if (!r || r->type != REDIS_REPLY_STRING) return std::nullopt;
  const std::string info(r->str, r->len);
  const auto max = info_field(info, "maxmemory"), used = info_field(info, "used_memory");
  if (!max || !used || *max == 0) return std::nullopt;
  return *max > *used ? *max - *used : 0;
}

std::optional<std::int64_t> redis_env::modified_s(const std::string& path) {
  file_result e;
  reply r = command({"HGET", file_key(path), "m"}, e);
  if (!r || r->type != REDIS_REPLY_STRING) return std::nullopt;
  const auto v = to_u64(r->str, r->len);
  if (!v) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

bool redis_env::set_modified_s(const std::string& path, std::int64_t seconds) {
  // Only on a file that exists (a deleted file is not brought back as a hash with one field).
  static const char* script =
      "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'm', ARGV[1]) return 1 end "
      "return 0";
  file_result e;
  reply r =
      command({"EVAL", script, "1", file_key(path), std::to_string(std::max<std::int64_t>(0, seconds))}, e);
  return r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

io_ticket redis_env::submit_read(const std::string& path, std::size_t n) {
  std::pair<file_result, file_buffer> slot;
  try {
    slot.second = file_buffer(n);
    slot.first = read(path, 0, slot.second.data(), n);
  } catch (const std::bad_alloc&) {
    slot.first = file_result::failure(ENOMEM, "allocate a read buffer for " + file_key(path));
  }
  const std::uint64_t id = next_ticket_++;
  reads_.emplace(id, std::move(slot));
  return io_ticket{id};
}

file_result redis_env::wait_read(io_ticket ticket, file_buffer& out) {
  auto it = reads_.find(ticket.id);
  if (it == reads_.end()) return file_result::failure(EINVAL, "wait_read: a ticket this env did not give");
  file_result r = std::move(it->second.first);
  out = r ? std::move(it->second.second) : file_buffer();
  reads_.erase(it);
  return r;
}

io_ticket redis_env::submit_write_atomic(const std::string& dir, const std::string& name,
                                         const std::vector<file_piece>& pieces) {
  const std::uint64_t id = next_ticket_++;
  writes_.emplace(id, write_atomic(dir, name, pieces));
  return io_ticket{id};
}

file_result redis_env::wait_write(io_ticket ticket) {
  auto it = writes_.find(ticket.id);
  if (it == writes_.end()) return file_result::failure(EINVAL, "wait_write: a ticket this env did not give");
  file_result r = std::move(it->second);
  writes_.erase(it);
  return r;
}

}  // namespace anchorage
