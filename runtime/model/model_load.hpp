#pragma once
// `--model PATH`: a Hugging Face checkpoint directory or a GGUF file.
#include <string>

#include "runtime/model/loaded_model.hpp"

namespace anchorage {

// A directory -> load_model_dir; a file whose first 4 bytes are "GGUF" -> the GGUF loader.
// Anything else (a missing path, another file) -> model_load_error naming the path.
loaded_model load_model(const std::string& path);

// True when the file at `path` starts with the GGUF magic "GGUF".
bool is_gguf_file(const std::string& path);

}  // namespace anchorage
