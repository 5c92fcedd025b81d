// Loading a Hugging Face checkpoint directory; see model_dir.hpp.
#include "runtime/model/model_dir.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/model/qwen35_config.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "runtime/model/safetensors_view.hpp"

namespace anchorage {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw model_load_error(p.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw model_load_error(p.string() + ": read error");
  return text.str();
}

json read_json_file(const fs::path& p) {
  try {
    return json::parse(read_text_file(p));
  } catch (const json::parse_error& e) {
    throw model_load_error(p.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// The text-only name (qwen35_weight_specs) of a tensor stored as `stored`; empty for a tensor of
// the vision tower, which a text model never reads.
std::string text_name(const std::string& stored) {
  static const std::string language = "model.language_model.";
  if (starts_with(stored, language)) return "model." + stored.substr(language.size());
  if (starts_with(stored, "model.visual.") || starts_with(stored, "visual.")) return {};
  return stored;
}

// The name a tensor of the vision tower stored as `stored` is kept under in loaded_vision
// ("model.visual." + its Hugging Face name, "visual.*" renamed so); empty for any other tensor.
std::string vision_name(const std::string& stored) {
  static const std::string full = "model.visual.", short_form = "visual.";
  if (starts_with(stored, full)) return stored;
  if (starts_with(stored, short_form)) return full + stored.substr(short_form.size());
  return {};
}

// Where a tensor is: its shard (index into shards) and its name there.
struct stored_tensor {
  std::size_t shard = 0;
  std::string name;
};

// The shards of one checkpoint, each opened (mapped) once, and every tensor by text-only name.
struct checkpoint_files {
  fs::path dir;
  std::vector<std::shared_ptr<const safetensors_view>>
      shards;  // shared: weights kept as stored point into them
  std::map<std::string, stored_tensor> tensors;
  // The vision tower's tensors by vision_name, collected only when `want_vision` (the config has a
  // vision_config); a shard of the index that holds only vision tensors and is not there is noted
  // in `missing_vision_shard` instead of failing the load (the text model does not need it).
  bool want_vision = false;
  std::map<std::string, stored_tensor> vision;
  std::string missing_vision_shard;

  std::size_t open_shard(const fs::path& file, const std::string& listed_in) {
    const std::string p = (dir / file).string();
    for (std::size_t i = 0; i < shards.size(); ++i)
      if (shards[i]->path() == p) return i;
    if (!fs::exists(dir / file))
      throw model_load_error(listed_in + ": shard '" + file.string() + "' is missing (" + p + ")");
    try {
      shards.push_back(std::make_shared<const safetensors_view>(safetensors_view::open(p)));
    } catch (const safetensors_error& e) {
      throw model_load_error(e.what());
    }
    return shards.size() - 1;
  }

  void add(const std::string& stored, std::size_t shard) {
    const std::string name = text_name(stored);
    if (name.empty()) {
      if (want_vision) add_to(vision, vision_name(stored), stored, shard);
      return;
    }
    add_to(tensors, name, stored, shard);
  }

  void add_to(std::map<std::string, stored_tensor>& to, const std::string& name, const std::string& stored,
              std::size_t shard) {
    const auto [it, fresh] = to.emplace(name, stored_tensor{shard, stored});
    if (!fresh)
      throw model_load_error(shards[shard]->path() + ": tensor '" + stored + "' is also stored as '" +
                             it->second.name + "' (in " + shards[it->second.shard]->path() + ")");
  }
};

checkpoint_files find_tensors(const fs::path& dir, bool want_vision) {
  checkpoint_files f;
  f.dir = dir;
  f.want_vision = want_vision;
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    const json index = read_json_file(index_path);
    const std::string where = index_path.string();
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw model_load_error(where + ": no 'weight_map' object");
    for (const auto& [stored, file] : index["weight_map"].items()) {
      if (!file.is_string()) throw model_load_error(where + ": weight_map['" + stored + "'] is not a string");
      if (text_name(stored).empty()) {
        // A vision shard need not even be there: without it the model loads text-only.
        if (!want_vision) continue;
        if (!fs::exists(dir / file.get<std::string>())) {
          if (f.missing_vision_shard.empty()) f.missing_vision_shard = file.get<std::string>();
          continue;
        }
      }
      const std::size_t s = f.open_shard(file.get<std::string>(), where);
      if (f.shards[s]->find(stored) == nullptr)
        throw model_load_error(f.shards[s]->path() + ": tensor '" + stored + "', listed in " + where +
                               ", is not in this shard");
      f.add(stored, s);
    }
    return f;
  }
  if (!fs::exists(dir / "model.safetensors"))
    throw model_load_error(dir.string() + ": no model.safetensors and no model.safetensors.index.json");
  const std::size_t s = f.open_shard("model.safetensors", dir.string());
  for (const safetensors_entry& e : f.shards[s]->entries()) f.add(e.name, s);
  return f;
}

bool is_mtp(const std::string& name) { return starts_with(name, "mtp."); }

// MTP is on when the config asks for it and the checkpoint has mtp.* tensors.
void settle_mtp(model_config& c, const checkpoint_files& f, const std::string& dir) {
  if (!c.mtp) return;
  const bool any =
      std::any_of(f.tensors.begin(), f.tensors.end(), [](const auto& t) { return is_mtp(t.first); });
  if (any) return;
  c.mtp = false;
  log_info() << dir
             << ": the config has an MTP layer but the weights hold no mtp.* tensors: loading without MTP";
}

// The shape the checkpoint gives for `spec`, accepting conv1d as [C, K] for [C, 1, K].
bool same_shape(const std::vector<std::int64_t>& got, const tensor_spec& spec) {
  if (got == spec.shape) return true;
  return spec.shape.size() == 3 && spec.shape[1] == 1 && got.size() == 2 && got[0] == spec.shape[0] &&
         got[1] == spec.shape[2];
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A matrix (two dimensions, as the engine multiplies it) or a stack of routed experts' matrices
// (mlp.experts.*, which the engine slices expert by expert), stored in BF16 or F16.
bool keep_stored(const safetensors_entry& e, const tensor_spec& spec) {
  const bool matrices = spec.shape.size() == 2 || spec.name.find(".mlp.experts.") != std::string::npos;
  return matrices && (e.dtype == "BF16" || e.dtype == "F16");
}

// The per-expert tensors whose rows, one after another, are the rows of the fused expert tensor
// `fused`: for mlp.experts.gate_up_proj [E, 2I, H], expert j's mlp.experts.{j}.gate_proj.weight
// [I, H] then its up_proj [I, H], j = 0..E-1; for mlp.experts.down_proj [E, H, I], each expert's
// down_proj [H, I]. Empty for any other tensor.
std::vector<tensor_spec> per_expert_parts(const tensor_spec& fused) {
  static const std::string gate_up = "experts.gate_up_proj", down = "experts.down_proj";
  const bool is_gate_up = ends_with(fused.name, gate_up);
  if ((!is_gate_up && !ends_with(fused.name, down)) || fused.shape.size() != 3) return {};
  const std::string experts =
      fused.name.substr(0, fused.name.size() - (is_gate_up ? gate_up : down).size()) + "experts.";
  const std::int64_t rows = is_gate_up ? fused.shape[1] / 2 : fused.shape[1], cols = fused.shape[2];
  std::vector<tensor_spec> parts;
  for (std::int64_t j = 0; j < fused.shape[0]; ++j) {
    const std::string e = experts + std::to_string(j) + ".";
    for (const char* proj : is_gate_up ? std::vector<const char*>{"gate_proj", "up_proj"}
                                       : std::vector<const char*>{"down_proj"})
      parts.push_back({e + proj + ".weight", {rows, cols}});
  }
  return parts;
}

// Whether the checkpoint holds any tensor of the per-expert form under `experts`
// ("mtp.layers.0.mlp.experts."): a name that goes on with an expert's number.
bool holds_per_expert(const checkpoint_files& f, const std::string& experts) {
  for (auto it = f.tensors.lower_bound(experts); it != f.tensors.end() && starts_with(it->first, experts);
       ++it)
    if (std::isdigit(static_cast<unsigned char>(it->first[experts.size()])) != 0) return true;
  return false;
}

// `note`, if any, says where else the tensor was looked for.
[[noreturn]] void throw_missing(const std::string& name, const std::string& dir, std::string note = {}) {
  if (starts_with(name, "model."))
    note = "looked for it also as 'model.language_model." + name.substr(6) + "'" +
           (note.empty() ? std::string() : "; " + note);
  throw model_load_error(dir + ": missing tensor '" + name + "'" +
                         (note.empty() ? std::string() : " (" + note + ")"));
}

// One tensor of the checkpoint, checked.
struct source_tensor {
  std::size_t shard;
  const safetensors_entry* entry;
};

// The checkpoint's tensor for `spec`, its dtype and shape checked; empty when there is none.
std::optional<source_tensor> find_checked(const tensor_spec& spec, const checkpoint_files& f) {
  const auto it = f.tensors.find(spec.name);
  if (it == f.tensors.end()) return std::nullopt;
  const safetensors_view& shard = *f.shards[it->second.shard];
  const safetensors_entry* e = shard.find(it->second.name);
  if (!is_float_dtype(e->dtype))
    throw model_load_error(shard.path() + ": tensor '" + e->name + "' has dtype " + e->dtype +
                           " (supported: F32, F16, BF16)");
  if (!same_shape(e->shape, spec))
    throw model_load_error(shard.path() + ": tensor '" + e->name + "' has shape " + shape_string(e->shape) +
                           ", expected " + shape_string(spec.shape));
  return source_tensor{it->second.shard, e};
}

// How one expected tensor is read: the checkpoint's tensor of that name, or (`stacked`) the
// per-expert tensors of a fused expert tensor, their rows one after another (per_expert_parts).
struct planned_read {
  const tensor_spec* spec;
  std::vector<source_tensor> parts;
  bool stacked = false;
};

// Checks every expected tensor (presence, dtype, shape) before converting any, and orders the
// reads by shard and offset, so that each mapping is read front to back. A fused expert tensor
// the checkpoint lacks is read from the per-expert form when it holds any of that block's experts
// (then every one of them must be there).
std::vector<planned_read> plan_reads(const std::vector<tensor_spec>& specs, const checkpoint_files& f,
                                     const std::string& dir) {
  std::vector<planned_read> plan;
  for (const tensor_spec& spec : specs) {
    if (const auto t = find_checked(spec, f)) {
      plan.push_back({&spec, {*t}});
      continue;
    }
    const std::vector<tensor_spec> parts = per_expert_parts(spec);
    if (parts.empty()) throw_missing(spec.name, dir);
    const std::string experts = spec.name.substr(0, spec.name.rfind('.') + 1);
    if (!holds_per_expert(f, experts))
      throw_missing(spec.name, dir,
                    "nor are its experts stored one by one, as '" + parts.front().name + "', ...");
    planned_read r{&spec, {}, true};
    for (const tensor_spec& part : parts) {
      const auto t = find_checked(part, f);
      if (!t) throw_missing(part.name, dir);
      r.parts.push_back(*t);
    }
    plan.push_back(std::move(r));
  }
  std::sort(plan.begin(), plan.end(), [](const planned_read& a, const planned_read& b) {
    const source_tensor &x = a.parts.front(), &y = b.parts.front();
    return x.shard != y.shard ? x.shard < y.shard : x.entry->begin < y.entry->begin;
  });
  return plan;
}

// The parts' values as float32, one after another, in a tensor of `shape`.
tensor stack_parts(const std::vector<source_tensor>& parts, const checkpoint_files& f,
                   const std::vector<std::int64_t>& shape) {
  tensor t;
  t.shape = shape;
  t.data.reserve(static_cast<std::size_t>(t.numel()));
  for (const source_tensor& p : parts) {
    const safetensors_view& shard = *f.shards[p.shard];
    const tensor part = shard.read(*p.entry);
    shard.release(*p.entry);
    t.data.insert(t.data.end(), part.data.begin(), part.data.end());
  }
  return t;
}

void log_ignored(const std::vector<planned_read>& plan, const checkpoint_files& f, const std::string& dir) {
  std::set<const safetensors_entry*> read;
  for (const planned_read& r : plan)
    for (const source_tensor& p : r.parts) read.insert(p.entry);
  std::size_t ignored = 0;
  std::string first;
  for (const auto& [name, where] : f.tensors) {
    if (read.count(f.shards[where.shard]->find(where.name)) != 0) continue;
    if (ignored++ == 0) first = where.name;
  }
  if (ignored > 0) log_debug() << dir << ": " << ignored << " tensors not read, e.g. '" << first << "'";
}

// The chat template: chat_template.jinja, else tokenizer_config's chat_template (a string, or a
// list of {"name", "template"} whose "default" entry is taken).
std::string chat_template_of(const fs::path& dir, const json& tokenizer_config) {
  const fs::path jinja = dir / "chat_template.jinja";
  if (fs::exists(jinja)) return read_text_file(jinja);
  if (!tokenizer_config.is_object() || !tokenizer_config.contains("chat_template")) return {};
  const json& t = tokenizer_config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array())
    for (const json& entry : t)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return entry["template"].get<std::string>();
  return {};
}

// The vision tower (loaded_vision.hpp): every tensor collected under model.visual.* / visual.*,
// converted to float32 in file order, and preprocessor_config.json's text. None when the
// checkpoint holds no vision tensor, or when a shard the index lists for them is missing (then
// logged as a warning).
std::optional<loaded_vision> read_vision(const json& vision_config, const checkpoint_files& f,
                                         const std::string& path) {
  if (f.vision.empty() && f.missing_vision_shard.empty()) {
    log_debug() << path << ": config.json has a vision_config but the weights hold no vision tensors";
    return std::nullopt;
  }
  if (!f.missing_vision_shard.empty()) {
    log_warn() << path << ": the vision tower's shard '" << f.missing_vision_shard
               << "' (listed in model.safetensors.index.json) is missing: loading without vision";
    return std::nullopt;
  }
  std::vector<source_tensor> order;
  for (const auto& [name, where] : f.vision) {
    const safetensors_view& shard = *f.shards[where.shard];
    const safetensors_entry* e = shard.find(where.name);
    if (!is_float_dtype(e->dtype))
      throw model_load_error(shard.path() + ": tensor '" + e->name + "' has dtype " + e->dtype +
                             " (supported: F32, F16, BF16)");
    order.push_back({where.shard, e});
  }
  std::sort(order.begin(), order.end(), [](const source_tensor& a, const source_tensor& b) {
    return a.shard != b.shard ? a.shard < b.shard : a.entry->begin < b.entry->begin;
  });
  loaded_vision v;
  v.source = path;
  v.config = vision_config;
  std::int64_t values = 0;
  for (const source_tensor& t : order) {
    const safetensors_view& shard = *f.shards[t.shard];
    tensor x = shard.read(*t.entry);
    shard.release(*t.entry);
    values += x.numel();
    v.weights.emplace(vision_name(t.entry->name), std::move(x));
  }
  const fs::path processor = f.dir / "preprocessor_config.json";
  if (fs::exists(processor)) v.processor_config = read_text_file(processor);
  log_info() << path << ": vision tower: " << v.weights.size() << " tensors, " << values
             << " parameters, converted to float32"
             << (v.processor_config.empty() ? ", no preprocessor_config.json" : "");
  return v;
}

void read_tokenizer_files(loaded_model& m, const fs::path& dir) {
  if (fs::exists(dir / "tokenizer.json")) m.tokenizer = read_json_file(dir / "tokenizer.json");
  if (fs::exists(dir / "tokenizer_config.json"))
    m.tokenizer_config = read_json_file(dir / "tokenizer_config.json");
  m.chat_template = chat_template_of(dir, m.tokenizer_config);
}

}  // namespace

loaded_model load_model_dir(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path dir(path);
  if (!fs::is_directory(dir)) throw model_load_error(path + ": not a directory");
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw model_load_error(path + ": no config.json (not a Hugging Face checkpoint directory)");

  loaded_model m;
  m.source = path;
  const json config_json = read_json_file(config_path);
  m.config = qwen35_config_from_json(config_json, config_path.string());
  // The model's name where a preset's would be: the directory's ("Qwen3.5-0.8B").
  m.config.preset = (dir.filename().empty() ? dir.parent_path() : dir).filename().string();
  // The vision tower is read when the config describes one (the official multimodal form).
  const bool want_vision = config_json.is_object() && config_json.contains("vision_config") &&
                           config_json["vision_config"].is_object();
  checkpoint_files files = find_tensors(dir, want_vision);
  settle_mtp(m.config, files, path);
  if (m.config.tied_embeddings && files.tensors.count("lm_head.weight") != 0)
    log_debug() << path << ": tied embeddings: lm_head.weight is not read";

  const std::vector<tensor_spec> specs = qwen35_weight_specs(m.config);
  const std::vector<planned_read> plan = plan_reads(specs, files, path);
  log_ignored(plan, files, path);
  std::int64_t values = 0;
  std::size_t stacked = 0, expert_parts = 0;
  for (const planned_read& r : plan) {
    if (r.stacked) {
      tensor t = stack_parts(r.parts, files, r.spec->shape);
      values += t.numel();
      ++stacked;
      expert_parts += r.parts.size();
      m.weights.emplace(r.spec->name, std::move(t));
      continue;
    }
    const safetensors_entry& entry = *r.parts.front().entry;
    const std::size_t s = r.parts.front().shard;
    const safetensors_view& shard = *files.shards[s];
    // A BF16 or F16 matrix stays as stored (the F32 ones and the rest are converted).
    if (keep_stored(entry, *r.spec)) {
      stored_weight w;
      w.shape = r.spec->shape;
      w.type = entry.dtype == "BF16" ? kernels::weight_type::bf16 : kernels::weight_type::f16;
      w.data = shard.bytes(entry);
      w.owner = files.shards[s];
      values += static_cast<std::int64_t>(w.rows() * w.cols());
      m.stored_types.emplace(r.spec->name, entry.dtype);
      m.stored.emplace(r.spec->name, std::move(w));
      continue;
    }
    tensor t = shard.read(entry);
    shard.release(entry);
    t.shape = r.spec->shape;  // conv1d [C, K] -> [C, 1, K]; the same values
    values += t.numel();
    m.weights.emplace(r.spec->name, std::move(t));
  }
  read_tokenizer_files(m, dir);
  if (want_vision) m.vision = read_vision(config_json["vision_config"], files, path);

  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  log_info() << "loaded " << path << ": " << m.weights.size() + m.stored.size() << " tensors ("
             << m.stored.size() << " kept as stored"
             << (stacked > 0
                     ? ", " + std::to_string(stacked) + " stacked from " + std::to_string(expert_parts) +
                           " per-expert tensors and converted to float32"
                     : std::string())
             << "), " << values << " parameters, " << files.shards.size() << " shard(s), mtp "
             << (m.config.mtp ? "on" : "off") << ", in " << ms << " ms";
  return m;
}

}  // namespace anchorage
