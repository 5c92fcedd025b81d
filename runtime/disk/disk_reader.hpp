#pragma once
// Reads the files of a durable store hit and verifies them before a byte reaches the engine
// (runtime/disk/disk_store.hpp). An anchor's restore reads its chunks and the anchor with
// submission ahead through the env's ring (file i + 1 is in flight while file i is verified, no
// thread of its own) and checks every one with the codec (runtime/disk/disk_codec.hpp): every
// stored token id against the prompt's, every header and block crc, the fingerprint, the grid,
// the layout's names and sizes, the chain of hashes. Only a read whose every file passed can be
// applied. Touches no index: the caller deletes what failed.
//
// Not thread-safe: it uses the env, whose one-thread rule it inherits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/record_format.hpp"
#include "runtime/core/status.hpp"
#include "runtime/core/token.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

// One file to read: its path and its exact length.
struct disk_read_file {
  std::string path;
  std::size_t bytes = 0;
};

// Every file of an anchor's restore, read and verified: the views point into the buffers.
class verified_anchor {
 public:
  // Writes rows [0, line) of every view and every section into `into` and sets its valid length
  // to the anchor's line. Throws as apply_chunk / apply_anchor (the caller's errors).
  void apply(state_adapter& into) const;
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  friend class disk_reader;
  std::vector<file_buffer> buffers_;
  std::vector<chunk_view> chunks_;
  anchor_view anchor_;
  std::size_t line_ = 0;
  std::uint64_t bytes_read_ = 0;
};

// Why a read failed, and which file: the caller deletes that file and everything above it.
struct disk_read_failure {
  std::size_t file = 0;  // index into the files asked for
  status why;
  // The record check it failed: truncated for a file shorter than asked, none when the read
  // itself failed (an I/O error, a file gone).
  record_format::fault fault = record_format::fault::none;
  // The file was not there (ENOENT: deleted under the index, e.g. by another process sharing the
  // folder): gone, not damaged.
  bool gone = false;
};

class disk_reader {
 public:
  // `env` and `layout` must outlive the reader.
  disk_reader(file_env& env, const state_layout& layout);

  // Reads `files` (the chunks at lines grid, 2 grid, ..., and at `line` when it is off the grid,
  // then the anchor at `line`) and verifies each against `prompt` (at least `line` ids) and
  // `chain` (the chunks' hashes, disk_format::chain_length(line, grid) of them). The
  // first failure stops the read (the file in flight is waited for and discarded) and names
  // the file (`failure`); the status then is the failure's.
  expected<verified_anchor> read_anchor(const std::vector<disk_read_file>& files,
                                        const std::vector<token_id>& prompt,
                                        const std::vector<std::uint64_t>& chain, std::size_t line,
                                        disk_read_failure& failure);

  // Reads and verifies one checkpoint file against `prompt` and the key; a failure's fault
  // in `failure` (its file 0).
  expected<checkpoint_read> read_checkpoint(const disk_read_file& file, const std::vector<token_id>& prompt,
                                            std::uint64_t key_hash, disk_read_failure& failure);

  // The token ids [0, line) a chain of chunk files holds (an anchor's at `line`), from their
  // token blocks alone (no rows, no crc check: a listing, not a restore).
  expected<std::vector<token_id>> read_chain_tokens(const std::vector<std::string>& chunk_paths,
                                                    std::size_t line);

 private:
  file_env& env_;
  const state_layout& layout_;
  std::size_t grid_;
};

}  // namespace anchorage
