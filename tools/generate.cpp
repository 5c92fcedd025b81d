// One prompt through the reference engine, from the command line; prints JSON.
//   anchorage-generate [engine flags] (--prompt TEXT | --chat TEXT) [--no-think]
//                      [--max-tokens N] [--temperature T] [--top-p P] [--seed N]
//                      [--save-weights FILE]
// Engine flags: --preset (small) --weights --weights-seed --prefix-chunk --ctx-size --device.
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>

#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/generation/generator.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

int main(int argc, char** argv) {
  select_blas_core(argv);
  engine_options opts;
  std::string prompt, chat, save_path;
  bool think = true;
  generation_request req;
  req.max_tokens = 64;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--no-think") {
        think = false;
        continue;
      }
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[++i];
      if (opts.parse(a, v)) continue;
      if (a == "--prompt")
        prompt = v;
      else if (a == "--chat")
        chat = v;
      else if (a == "--max-tokens")
        req.max_tokens = std::stoi(v);
      else if (a == "--temperature")
        req.sampling.temperature = std::stof(v);
      else if (a == "--top-p")
        req.sampling.top_p = std::stof(v);
      else if (a == "--seed")
        req.sampling.seed = std::stoull(v);
      else if (a == "--save-weights")
        save_path = v;
      else
        throw std::invalid_argument("unknown flag " + a);
    }
    const model_config c = opts.config();
    const tensor_map w =
        opts.weights_path ? load_weights(*opts.weights_path, c) : random_weights(c, opts.weights_seed);
    if (!save_path.empty()) save_weights(save_path, w, c);
    tokenizer tok;
    std::string text = prompt;
    if (!chat.empty()) {
      template_options t;
      t.enable_thinking = think;
      chat_message m;
      m.role = "user";
      m.content = chat;
      text = render_chat({m}, t);
    }
    if (text.empty()) throw std::invalid_argument("give --prompt TEXT or --chat TEXT");
    const auto ids = tok.encode(text, !chat.empty());
    req.stop_tokens = {tok.ids().im_end, tok.ids().endoftext};

    engine e(c, w, opts.backend());
    const auto t0 = std::chrono::steady_clock::now();
    e.prefill(ids);
    const auto t1 = std::chrono::steady_clock::now();
    generator g(e, req);
    const auto out = g.run();
    const auto t2 = std::chrono::steady_clock::now();
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    nlohmann::json j;
    j["prompt_tokens"] = ids.size();
    j["completion_tokens"] = out.size();
    j["finish_reason"] = *g.reason();  // run() ran to the end
    j["text"] = tok.decode(out);       // invalid UTF-8 is replaced when dumped below
    j["prefill_s"] = secs(t0, t1);
    j["decode_s"] = secs(t1, t2);
    j["fingerprint"] = e.layout().fingerprint;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } catch (const std::exception& ex) {
    log_error() << ex.what();
    return 2;
  }
}
