// The server's configuration (runtime/server/server_config.hpp): a `--config FILE.json` of any
// bytes, and any argument list (the input cut at NUL bytes). parse_server_args throws only
// std::invalid_argument, with a message; an accepted configuration keeps its ranges.
#include <exception>
#include <stdexcept>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "runtime/server/server_config.hpp"

using namespace anchorage;

namespace {

void parse(const std::vector<std::string>& args) {
  try {
    const server_config c = parse_server_args(args);
    fuzz::check(c.port >= 0 && c.port <= 65535, "the port is in range");
  } catch (const std::invalid_argument& e) {
    fuzz::check(std::string_view(e.what()).size() > 0, "a refusal says why");
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::memfd_file file(data, size);
  parse({"--config", file.path()});

  std::vector<std::string> args;
  std::string arg;
  for (char c : fuzz::as_text(data, size)) {
    if (c != '\0') {
      arg.push_back(c);
      continue;
    }
    args.push_back(arg);
    arg.clear();
  }
  if (!arg.empty()) args.push_back(arg);
  // --config would name a file of this machine: only the memfd above is read.
  for (const auto& a : args)
    if (a.rfind("--config", 0) == 0) return 0;
  parse(args);
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  unsetenv("ANCHORAGE_ADMIN_TOKEN");
  return 0;
}
