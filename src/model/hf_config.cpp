#include "zibert/model/hf_config.hpp"

#include <fstream>
#include <map>

#include "zibert/base/error.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/model/safetensors.hpp"

namespace zibert {

namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxJsonFile = 64u << 20;  // tokenizer.json of a big vocabulary is a few MB
constexpr std::uintmax_t kMaxVocabFile = 256u << 20;

std::string file_text(const fs::path& path, std::uintmax_t limit) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read (" + ec.message() + ")");
  if (size > limit) throw Error(path.string() + ": " + std::to_string(size) + " bytes, more than such a file holds");
  std::ifstream in(path, std::ios::binary);
  std::string s(size, '\0');
  if (!in.read(s.data(), static_cast<std::streamsize>(size))) throw Error(path.string() + ": cannot read");
  return s;
}

}  // namespace

nlohmann::json hf_json_file(const std::filesystem::path& path) {
  const std::string text = file_text(path, kMaxJsonFile);
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(path.string() + ": JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw Error(path.string() + ": not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not JSON (" + e.what() + ")");
  }
}

// vocab.txt: one token per line, as transformers' load_vocab reads it (only
// the "\n" is cut). Each line must be UTF-8; WordPiece refuses empty and
// duplicated tokens, naming them.
std::vector<std::string> read_hf_vocab(const std::filesystem::path& path) {
  const std::string text = file_text(path, kMaxVocabFile);
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(start, end - start);
    if (invalid_utf8_offset(token) >= 0)
      throw Error(path.string() + ":" + std::to_string(tokens.size() + 1) + ": invalid UTF-8");
    if (token.empty())
      throw Error(path.string() + ":" + std::to_string(tokens.size() + 1) + ": an empty line where a token belongs");
    tokens.push_back(std::move(token));
    start = end + 1;
  }
  return tokens;
}

namespace {

template <class T>
T field(const nlohmann::json& j, const char* key, T fallback, const fs::path& file) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(file.string() + ": \"" + key + "\" is " + j[key].dump() + ", not of the expected type");
  }
}

std::int64_t size_field(const nlohmann::json& j, const char* key, const fs::path& file, std::int64_t lo,
                        std::int64_t hi) {
  if (!j.contains(key)) throw Error(file.string() + ": has no \"" + key + "\"");
  if (!j[key].is_number_integer()) throw Error(file.string() + ": \"" + key + "\" is not an integer");
  const auto v = j[key].get<std::int64_t>();
  if (v < lo || v > hi)
    throw Error(file.string() + ": \"" + key + "\" is " + std::to_string(v) + ", outside " + std::to_string(lo) +
                ".." + std::to_string(hi));
  return v;
}

}  // namespace


HfConfig read_hf_config(const std::filesystem::path& file) {
  const nlohmann::json j = hf_json_file(file);
  HfConfig h;
  const std::string model_type = field<std::string>(j, "model_type", "", file);
  h.architectures = field<std::vector<std::string>>(j, "architectures", {}, file);
  if (model_type != "bert" && !(model_type.empty() && !h.architectures.empty() && h.architectures[0].starts_with("Bert")))
    throw Error(file.string() + ": model_type \"" + model_type + "\" is not BERT's (\"bert\"), which is the one zibert reads");
  for (const std::string& a : h.architectures)
    for (const char* refused : {"BertForTokenClassification", "BertForQuestionAnswering", "BertForMultipleChoice",
                                "BertLMHeadModel"})
      if (a == refused)
        throw Error(file.string() + ": a " + a + " checkpoint; zibert classifies whole texts "
                    "(BertForSequenceClassification) and reads encoders (BertModel, BertForMaskedLM, BertForPreTraining)");
  const std::string act = field<std::string>(j, "hidden_act", "gelu", file);
  if (act != "gelu") throw Error(file.string() + ": hidden_act \"" + act + "\"; zibert computes BERT's erf GELU (\"gelu\") only");
  const std::string pos = field<std::string>(j, "position_embedding_type", "absolute", file);
  if (pos != "absolute")
    throw Error(file.string() + ": position_embedding_type \"" + pos + "\"; zibert has absolute positions only");
  if (field<bool>(j, "is_decoder", false, file) || field<bool>(j, "add_cross_attention", false, file))
    throw Error(file.string() + ": a decoder (is_decoder / add_cross_attention); zibert's BERT is an encoder");
  for (const char* ernie : {"use_task_id", "task_type_vocab_size"})
    if (j.contains(ernie) && !j[ernie].is_null() && j[ernie] != false)
      throw Error(file.string() + ": \"" + ernie + "\" (ERNIE's task embeddings), which zibert does not have");
  if (field<std::int64_t>(j, "pad_token_id", 0, file) != 0)
    throw Error(file.string() + ": pad_token_id is not 0; zibert pads with id 0");
  ModelConfig& c = h.config;
  c.vocab_size = size_field(j, "vocab_size", file, 6, 10'000'000);
  c.dim = size_field(j, "hidden_size", file, 1, 65536);
  c.layers = size_field(j, "num_hidden_layers", file, 1, 256);
  c.heads = size_field(j, "num_attention_heads", file, 1, 65536);
  c.ffn = size_field(j, "intermediate_size", file, 1, 262144);
  c.max_len = size_field(j, "max_position_embeddings", file, 3, 65536);
  c.type_vocab_size = j.contains("type_vocab_size") ? size_field(j, "type_vocab_size", file, 1, 1024) : 2;
  c.layer_norm_eps = field<double>(j, "layer_norm_eps", 1e-12, file);
  c.dropout = field<double>(j, "hidden_dropout_prob", 0.1, file);
  h.tie_word_embeddings = field<bool>(j, "tie_word_embeddings", true, file);
  if (j.contains("zibert") && j["zibert"].is_object()) {
    const nlohmann::json& z = j["zibert"];
    h.character = z.value("tokenizer", "") == "character";
    h.positive = z.value("positive_label", "");
    try {
      if (z.contains("windows")) h.windows = windows_from_name(z.value("windows", ""));
    } catch (const Error& e) {
      throw Error(file.string() + ": zibert.windows: " + e.what());
    }
  }
  const std::string problem = field<std::string>(j, "problem_type", "single_label_classification", file);
  if (problem == "regression") throw Error(file.string() + ": problem_type regression; zibert classifies");
  if (problem != "single_label_classification" && problem != "multi_label_classification")
    throw Error(file.string() + ": problem_type \"" + problem + "\" is not one zibert knows");
  c.multi_label = problem == "multi_label_classification";
  if (j.contains("id2label") && j["id2label"].is_object()) {
    std::map<std::int64_t, std::string> by_id;
    for (const auto& [k, v] : j["id2label"].items()) {
      std::size_t used = 0;
      std::int64_t id = -1;
      try {
        id = std::stoll(k, &used);
      } catch (const std::exception&) {
      }
      if (used != k.size() || id < 0 || !v.is_string())
        throw Error(file.string() + ": id2label has an entry \"" + k + "\" that is not id → name");
      by_id[id] = v.get<std::string>();
    }
    for (const auto& [id, name] : by_id) {
      if (id != static_cast<std::int64_t>(h.labels.size())) throw Error(file.string() + ": id2label skips an id");
      h.labels.push_back(name);
    }
  }
  try {
    c.task = Task::mlm;
    c.labels = 0;
    c.validate();
  } catch (const Error& e) {
    throw Error(file.string() + ": " + e.what());
  }
  return h;
}

// The tokenizer settings: tokenizer_config.json, overridden by tokenizer.json's
// normalizer when present; Hugging Face's defaults otherwise.
WordPieceOptions read_hf_tokenizer_options(const std::filesystem::path& dir) {
  WordPieceOptions o;
  if (const fs::path f = dir / "tokenizer_config.json"; fs::exists(f)) {
    const nlohmann::json j = hf_json_file(f);
    const std::string cls = field<std::string>(j, "tokenizer_class", "BertTokenizer", f);
    if (cls != "BertTokenizer" && cls != "BertTokenizerFast")
      throw Error(f.string() + ": tokenizer_class " + cls + "; zibert tokenizes as BertTokenizer");
    o.lowercase = field<bool>(j, "do_lower_case", true, f);
    o.handle_chinese_chars = field<bool>(j, "tokenize_chinese_chars", true, f);
    if (j.contains("strip_accents") && !j["strip_accents"].is_null()) o.strip_accents = field<bool>(j, "strip_accents", false, f);
    const std::map<std::string, std::string> specials = {
        {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
    for (const fs::path& g : {f, dir / "special_tokens_map.json"}) {
      if (!fs::exists(g)) continue;
      const nlohmann::json s = g == f ? j : hf_json_file(g);
      for (const auto& [key, want] : specials) {
        if (!s.contains(key)) continue;
        const nlohmann::json& v = s[key];
        const std::string got = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
        if (got != want) throw Error(g.string() + ": " + key + " is \"" + got + "\"; zibert's WordPiece uses " + want);
      }
    }
  }
  if (const fs::path f = dir / "tokenizer.json"; fs::exists(f)) {
    const nlohmann::json j = hf_json_file(f);
    const nlohmann::json n = j.value("normalizer", nlohmann::json());
    if (n.is_object()) {
      if (n.value("type", "") != "BertNormalizer")
        throw Error(f.string() + ": normalizer " + n.value("type", "?") + "; zibert reads BertNormalizer only");
      o.clean_text = field<bool>(n, "clean_text", true, f);
      o.handle_chinese_chars = field<bool>(n, "handle_chinese_chars", true, f);
      o.lowercase = field<bool>(n, "lowercase", true, f);
      o.strip_accents.reset();
      if (n.contains("strip_accents") && !n["strip_accents"].is_null()) o.strip_accents = field<bool>(n, "strip_accents", false, f);
    }
    const nlohmann::json m = j.value("model", nlohmann::json());
    if (m.is_object()) {
      if (m.value("type", "WordPiece") != "WordPiece")
        throw Error(f.string() + ": model " + m.value("type", "?") + "; zibert reads WordPiece only");
      if (m.value("continuing_subword_prefix", "##") != "##")
        throw Error(f.string() + ": continuing_subword_prefix is not \"##\"");
      o.max_input_chars_per_word = field<std::int64_t>(m, "max_input_chars_per_word", 100, f);
    }
  }
  return o;
}

// zibert's character tokenizer, for a checkpoint zibert export --hf wrote of
// one of its own models: the vocabulary, lower-casing as tokenizer_config.json
// says, and the variants tokenizer.json lists as second names of ids.
Tokenizer read_hf_character_tokenizer(const std::filesystem::path& dir, const std::vector<std::string>& tokens) {
  Normalization norm;
  if (const fs::path f = dir / "tokenizer_config.json"; fs::exists(f)) norm.lowercase = field<bool>(hf_json_file(f), "do_lower_case", false, f);
  Vocab vocab;
  try {
    vocab = Vocab::from_tokens(tokens);
  } catch (const Error& e) {
    throw Error((dir / "vocab.txt").string() + ": " + e.what());
  }
  if (const fs::path f = dir / "tokenizer.json"; fs::exists(f)) {
    const nlohmann::json j = hf_json_file(f);
    std::map<char32_t, char32_t> variants;
    if (j.contains("model") && j["model"].is_object() && j["model"].contains("vocab") && j["model"]["vocab"].is_object())
      for (const auto& [key, id] : j["model"]["vocab"].items()) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= vocab.size())
          throw Error(f.string() + ": the id of \"" + key + "\" is not one of the vocabulary's");
        const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
        if (tokens[i] == key) continue;
        std::vector<char32_t> from, to;
        try {
          from = utf8_decode(key), to = utf8_decode(tokens[i]);
        } catch (const Error&) {
          throw Error(f.string() + ": invalid UTF-8 in the vocabulary");
        }
        if (from.size() != 1 || to.size() != 1) throw Error(f.string() + ": \"" + key + "\" is not a variant of one character");
        variants.emplace(from[0], to[0]);
      }
    try {
      vocab.set_variants(std::move(variants));
    } catch (const Error& e) {
      throw Error(f.string() + ": " + e.what());
    }
  }
  return Tokenizer(std::move(vocab), norm);
}

}  // namespace zibert
