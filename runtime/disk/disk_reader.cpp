#include "runtime/disk/disk_reader.hpp"

#include <algorithm>
#include <cerrno>

#include "protocol/disk_format.hpp"
#include "runtime/disk/disk_codec_detail.hpp"

namespace anchorage {

namespace df = disk_format;

namespace {

// A read that failed: a file shorter than the index says is truncated (file_env's ERANGE), any
// other error the I/O's (none).
df::fault read_fault(const file_result& r) {
  return r.error == ERANGE ? df::fault::truncated : df::fault::none;
}

}  // namespace

void verified_anchor::apply(state_adapter& into) const {
  for (const auto& v : chunks_) apply_chunk(into, v);
  apply_anchor(into, anchor_, line_);
}

disk_reader::disk_reader(file_env& env, const state_layout& layout)
    : env_(env), layout_(layout), grid_(static_cast<std::size_t>(layout.grid)) {}

expected<verified_anchor> disk_reader::read_anchor(const std::vector<disk_read_file>& files,
                                                   const std::vector<token_id>& prompt,
                                                   const std::vector<std::uint64_t>& chain, std::size_t line,
                                                   disk_read_failure& failure) {
  verified_anchor out;
  out.line_ = line;
  out.buffers_.resize(files.size());
  out.chunks_.reserve(chain.size());
  if (files.size() != chain.size() + 1 || line == 0 || chain.size() != df::chain_length(line, grid_)) {
    failure = {0, status::failure("a restore needs every chunk of the chain and the anchor")};
    return failure.why;
  }
  // File i + 1 is submitted before file i is verified: the crc work overlaps the I/O.
  io_ticket ahead = env_.submit_read(files[0].path, files[0].bytes);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const file_result r = env_.wait_read(ahead, out.buffers_[i]);
    ahead = r && i + 1 < files.size() ? env_.submit_read(files[i + 1].path, files[i + 1].bytes) : io_ticket{};
    auto stop = [&](const std::string& what, df::fault f, bool gone = false) {
      if (ahead) {  // the env is idle again before the caller deletes anything
        file_buffer discard;
        env_.wait_read(ahead, discard);
      }
      failure = {i, status::failure(what), f, gone};
      return failure.why;
    };
    if (!r) return stop(r.message, read_fault(r), r.error == ENOENT);
    out.bytes_read_ += files[i].bytes;
    const unsigned char* d = out.buffers_[i].data();
    if (i < chain.size()) {
      auto v = verify_chunk(d, files[i].bytes, layout_, prompt, std::min((i + 1) * grid_, line));
      if (!v.ok()) return stop(files[i].path + ": " + v.error, v.fault);
      out.chunks_.push_back(std::move(v.value));
    } else {
      auto v = verify_anchor(d, files[i].bytes, layout_, chain);
      if (!v.ok()) return stop(files[i].path + ": " + v.error, v.fault);
      out.anchor_ = std::move(v.value);
    }
  }
  return out;
}

expected<checkpoint_read> disk_reader::read_checkpoint(const disk_read_file& file,
                                                       const std::vector<token_id>& prompt,
                                                       std::uint64_t key_hash, disk_read_failure& failure) {
  file_buffer buf;
  const file_result fr = env_.wait_read(env_.submit_read(file.path, file.bytes), buf);
  if (!fr) {
    failure = {0, status::failure(file.path + ": " + fr.message), read_fault(fr), fr.error == ENOENT};
    return failure.why;
  }
  auto d = decode_checkpoint(buf.data(), buf.size(), layout_, prompt, key_hash);
  if (!d.ok()) {
    failure = {0, status::failure(file.path + ": " + d.error), d.fault};
    return failure.why;
  }
  return std::move(d.value);
}

expected<std::vector<token_id>> disk_reader::read_chain_tokens(const std::vector<std::string>& chunk_paths,
                                                               std::size_t line) {
  if (line == 0 || chunk_paths.size() != df::chain_length(line, grid_))
    return status::failure("a chain of " + std::to_string(chunk_paths.size()) +
                           " chunks does not reach line " + std::to_string(line));
  const std::size_t hb = df::chunk_fixed_bytes + layout_.views.size() * df::entry_bytes;
  std::vector<unsigned char> block(grid_ * df::token_bytes);
  std::vector<token_id> tokens;
  tokens.reserve(line);
  for (std::size_t c = 0; c < chunk_paths.size(); ++c) {
    const std::size_t rows = df::chunk_rows(std::min((c + 1) * grid_, line), grid_);
    if (const file_result r = env_.read(chunk_paths[c], hb, block.data(), rows * df::token_bytes); !r)
      return status::failure(r.message);
    for (std::size_t i = 0; i < rows; ++i)
      tokens.push_back(static_cast<token_id>(disk_codec_detail::get_u32(block.data() + i * df::token_bytes)));
  }
  return tokens;
}

}  // namespace anchorage
