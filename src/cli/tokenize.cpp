// zibert tokenize: what a model sees of each input line, as tokens or ids.
#include "chunks.hpp"
#include "cli.hpp"
#include "zibert/base/threads.hpp"
#include "zibert/model/model_file.hpp"

namespace zibert::cli {
namespace {

struct TokenizeCli {
  std::vector<std::string> inputs;
  std::string model, invalid = "error";
  bool ids = false;
  int threads = 0;
};

// One line's record: [CLS] tokens [SEP] (not cut into windows), tokens
// separated by spaces; zibert's space token is written ␠ so that the
// separators stay unambiguous.
std::string record(const TokenizeCli& o, const Tokenizer& tokenizer, const std::vector<std::int32_t>& ids) {
  const SpecialIds specials = tokenizer.specials();
  std::string out;
  auto put = [&](std::int32_t id) {
    if (!out.empty()) out += ' ';
    if (o.ids) {
      out += std::to_string(id);
      return;
    }
    const std::string token = tokenizer.token(id);
    out += token == " " ? "\u2420" : token;
  };
  put(specials.cls);
  for (std::int32_t id : ids) put(id);
  put(specials.sep);
  return out + "\n";
}

int run_tokenize(const TokenizeCli& o) {
  apply_threads(o.threads);
  const Model model = load_model(resolve_model_path(o.model));
  Tokenizer tokenizer = model.tokenizer;
  tokenizer.set_replace_invalid(o.invalid == "replace");
  const std::vector<std::string> inputs = o.inputs.empty() ? std::vector<std::string>{"-"} : o.inputs;
  for (const std::string& path : inputs) {
    LineSource src = open_input(path);
    std::int64_t line_no = 0;
    for_each_chunk(src, tokenizer, line_no, [&](const Chunk& chunk) {
      std::string out;
      for (const std::vector<std::int32_t>& ids : chunk.ids) out += record(o, tokenizer, ids);
      if (!out.empty()) write_out(out);  // the lines before a bad one are written
      return true;
    });
  }
  return kExitOk;
}

}  // namespace

Runner setup_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeCli>();
  app.footer("One line per input line (empty lines included): the tokens the model reads it as, [CLS] first\n"
             "and [SEP] last, separated by spaces (a space token is written \u2420), or their ids with --ids.\n"
             "A character model has one token per character after its normalisation (NFKC); an imported\n"
             "BERT's WordPiece tokenizer splits words into pieces (##…) as Hugging Face's BertTokenizer does.\n"
             "Lines longer than the model reads are shown whole; classify and embed cut them into windows.\n\n"
             "Examples:\n"
             "  echo '佛跳牆，ＡＢＣ' | zibert tokenize -m fotiaoqiang\n"
             "  zibert tokenize -m fotiaoqiang --ids notes.txt");
  add_inputs_option(app, o->inputs);
  add_model_option(app, o->model);
  app.add_flag("--ids", o->ids, "Print the token ids instead of the tokens");
  add_invalid_option(app, o->invalid);
  add_threads_option(app, o->threads);
  return [o] { return run_tokenize(*o); };
}

}  // namespace zibert::cli
