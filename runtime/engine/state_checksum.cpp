// The adapter's default checksums: the bytes copied out and summed on the CPU
// (kernels/block_checksum.hpp), zero-padded to whole 64-bit words.
#include <vector>

#include "kernels/block_checksum.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {
namespace {

void sum_host(std::vector<unsigned char>& bytes, std::uint64_t out[2]) {
  bytes.resize((bytes.size() + 7) / 8 * 8, 0);
  kernels::cpu::block_checksum(bytes.data(), static_cast<long>(bytes.size()), 0, bytes.empty() ? 0 : 1, out);
}

}  // namespace

void state_adapter::checksum_rows(std::size_t view, std::size_t a, std::size_t b,
                                  std::uint64_t out[2]) const {
  std::vector<unsigned char> bytes(b > a ? (b - a) * layout().views.at(view).bytes_per_token : 0);
  if (b > a) copy_rows_out(view, a, b, bytes.data());
  sum_host(bytes, out);
}

void state_adapter::checksum_section(std::size_t section, std::uint64_t out[2]) const {
  std::vector<unsigned char> bytes(layout().sections.at(section).bytes);
  copy_section_out(section, bytes.data());
  sum_host(bytes, out);
}

}  // namespace anchorage
