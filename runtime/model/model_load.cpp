#include "runtime/model/model_load.hpp"

#include <filesystem>
#include <fstream>

#include "runtime/model/model_dir.hpp"
#include "runtime/model/qwen35_gguf.hpp"

namespace anchorage {

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F';
}

loaded_model load_model(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_model_dir(path);
  if (!fs::exists(path, ec)) throw model_load_error(path + ": no such file or directory");
  if (fs::is_regular_file(path, ec) && is_gguf_file(path)) {
    return load_qwen35_gguf(path);
  }
  throw model_load_error(path + ": neither a Hugging Face checkpoint directory nor a GGUF file");
}

void convert_stored_to_f32(loaded_model& m) {
  for (auto& [name, w] : m.stored) m.weights.insert_or_assign(name, to_f32(w));
  m.stored.clear();
}

}  // namespace anchorage
