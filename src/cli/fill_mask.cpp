// zibert fill-mask: an encoder's top guesses for each [MASK] of a text.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chunks.hpp"
#include "cli.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/infer/fill_mask.hpp"

namespace zibert::cli {
namespace {

struct FillMaskCli {
  std::vector<std::string> texts;
  std::string model;
  int top_k = 5;
  bool json = false;
  int threads = 0;
};

// The text with the guess in the [MASK]'s place (the others left as they are).
std::string filled(const Tokenizer& tok, const std::vector<std::int32_t>& ids, std::size_t which, std::int32_t guess) {
  std::string out;
  std::size_t mask = 0;
  for (std::int32_t id : ids) {
    if (id == tok.specials().mask && mask++ == which)
      out += tok.token(guess);
    else
      out += tok.token(id);
  }
  return out;
}

std::string report(const FillMaskCli& o, const Model& enc, const std::string& text) {
  const std::vector<std::int32_t> ids = encode_with_masks(enc.tokenizer, text);
  const auto guesses = fill_mask(enc, ids, o.top_k);
  std::string out;
  if (o.json) {
    nlohmann::ordered_json j;
    j["text"] = text;
    j["masks"] = nlohmann::json::array();
    for (std::size_t m = 0; m < guesses.size(); ++m) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const MaskGuess& g : guesses[m])
        list.push_back({{"token", enc.tokenizer.token(g.id)}, {"score", g.probability},
                        {"sequence", filled(enc.tokenizer, ids, m, g.id)}});
      j["masks"].push_back(list);
    }
    return j.dump() + "\n";
  }
  char buf[64];
  for (std::size_t m = 0; m < guesses.size(); ++m)
    for (std::size_t r = 0; r < guesses[m].size(); ++r) {
      std::snprintf(buf, sizeof buf, "%zu\t%zu\t", m + 1, r + 1);
      out += buf + enc.tokenizer.token(guesses[m][r].id);
      std::snprintf(buf, sizeof buf, "\t%.4f\t", guesses[m][r].probability);
      out += buf + filled(enc.tokenizer, ids, m, guesses[m][r].id) + "\n";
    }
  return out;
}

// report() of one text, its errors naming where the text came from.
std::string report_at(const FillMaskCli& o, const Model& enc, const std::string& text, const std::string& name,
                      std::int64_t line) {
  try {
    return report(o, enc, text);
  } catch (const Utf8Error& e) {
    throw error_at(name, line, e.byte + 1, "invalid UTF-8");
  } catch (const Error& e) {
    throw error_at(name, line, e.what());
  }
}

int run_fill_mask(const FillMaskCli& o) {
  apply_threads(o.threads);
  const std::string path = resolve_model_path(o.model);
  const Model enc = load_model(path);
  if (enc.config.task != Task::mlm)
    throw Error(path + ": fill-mask needs an encoder (zibert pretrain's); this is a classifier");
  if (!o.texts.empty()) {  // the texts on the command line number as lines do
    for (std::size_t i = 0; i < o.texts.size(); ++i)
      write_out(report_at(o, enc, o.texts[i], "(argument)", static_cast<std::int64_t>(i) + 1));
    return kExitOk;
  }
  LineSource src = open_input("-");
  std::string line;
  for (std::int64_t n = 1; src.next(line); ++n) write_out(report_at(o, enc, line, display_name(src), n));
  return kExitOk;
}

}  // namespace

Runner setup_fill_mask(CLI::App& app) {
  auto o = std::make_shared<FillMaskCli>();
  app.footer("An encoder's top guesses for each [MASK] in a text, with their probabilities; texts as\n"
             "arguments, else one per line of stdin. TSV: mask number, rank, token, probability, the\n"
             "text filled in.\n\nExample:\n  zibert fill-mask -m zh-encoder \"请输入密[MASK]。\"");
  app.add_option("texts", o->texts, "Texts with [MASK] (none: read lines from stdin)");
  add_model_option(app, o->model);
  app.add_option("-k,--top-k", o->top_k, "Guesses per [MASK]")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_flag("--json", o->json, "One JSON line per text: {text, masks: [[{token, score, sequence}, …], …]}");
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o] { return run_fill_mask(*o); };
}

}  // namespace zibert::cli
