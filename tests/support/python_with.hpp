#pragma once
// A Python interpreter that can import the modules a reference script needs (numpy, PIL): the
// first of /usr/bin/python3 (Debian's, where python3-numpy and python3-pil install) and python3
// on PATH (which may be another installation without them) that imports them all. Empty when
// none does: the test that needs it skips with a WARN saying why.
#include <cstdlib>
#include <string>

namespace anchorage::test {

// `modules`: a comma-separated import list, as Python writes it ("numpy, PIL").
inline std::string python_with(const std::string& modules) {
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import " + modules + "' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return {};
}

}  // namespace anchorage::test
