#pragma once
// What the GGUF loaders' typed metadata reads share (runtime/model/qwen35_gguf.cpp,
// runtime/model/mmproj_gguf.cpp): an absent or unfit key is a model_load_error naming the file and
// the key. Each loader derives its own typed reads from this.
#include <string>

#include "runtime/model/gguf_file.hpp"
#include "runtime/model/loaded_model.hpp"

namespace anchorage {

struct gguf_meta {
  const gguf_reader& r;

  // Throws model_load_error "<path>: metadata '<key>' <why>".
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw model_load_error(r.path() + ": metadata '" + key + "' " + why);
  }
  // The value at `key`; throws model_load_error "<path>: missing metadata '<key>'" when absent.
  const gguf_value& need(const std::string& key) const {
    const gguf_value* v = r.find(key);
    if (v == nullptr) throw model_load_error(r.path() + ": missing metadata '" + key + "'");
    return *v;
  }
};

}  // namespace anchorage
