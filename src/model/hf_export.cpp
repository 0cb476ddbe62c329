#include "zibert/model/hf_export.hpp"

#include <filesystem>

#include "zibert/base/error.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/model/safetensors.hpp"

namespace zibert {

namespace {

nlohmann::json hf_config(const Model& m) {
  const ModelConfig& c = m.config;
  const bool classify = c.task == Task::classify;
  nlohmann::json j = {{"architectures", {classify ? "BertForSequenceClassification" : "BertForMaskedLM"}},
                      {"model_type", "bert"},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.dim},
                      {"num_hidden_layers", c.layers},
                      {"num_attention_heads", c.heads},
                      {"intermediate_size", c.ffn},
                      {"hidden_act", "gelu"},
                      {"hidden_dropout_prob", c.dropout},
                      {"attention_probs_dropout_prob", c.dropout},
                      {"max_position_embeddings", c.max_len},
                      {"type_vocab_size", c.type_vocab_size > 0 ? c.type_vocab_size : 2},
                      {"layer_norm_eps", c.layer_norm_eps},
                      {"initializer_range", 0.02},
                      {"pad_token_id", 0},
                      {"position_embedding_type", "absolute"},
                      {"tie_word_embeddings", classify || c.tie_decoder},
                      {"torch_dtype", "float32"}};
  nlohmann::json zibert = {{"tokenizer", m.tokenizer.kind() == TokenizerKind::wordpiece ? "wordpiece" : "character"}};
  if (classify) {
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (std::size_t i = 0; i < m.classifier.labels.size(); ++i) {
      id2label[std::to_string(i)] = m.classifier.labels[i];
      label2id[m.classifier.labels[i]] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
    j["problem_type"] = c.multi_label ? "multi_label_classification" : "single_label_classification";
    zibert["windows"] = windows_name(m.classifier.window_combine());
    if (!m.classifier.positive.empty()) zibert["positive_label"] = m.classifier.positive;
    if (m.classifier.calibration) zibert["temperature_folded"] = m.classifier.calibration->temperature;
  }
  j["zibert"] = zibert;
  return j;
}

nlohmann::json tokenizer_config(const Model& m) {
  nlohmann::json j = {{"tokenizer_class", "BertTokenizer"}, {"model_max_length", m.config.max_len},
                      {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                      {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
  if (const WordPiece* wp = m.tokenizer.wordpiece()) {
    const WordPieceOptions& o = wp->options();
    j["do_lower_case"] = o.lowercase;
    j["tokenize_chinese_chars"] = o.handle_chinese_chars;
    j["strip_accents"] = o.strip_accents ? nlohmann::json(*o.strip_accents) : nlohmann::json();
  } else {
    j["do_lower_case"] = m.tokenizer.normalization().lowercase;
    j["tokenize_chinese_chars"] = true;
  }
  return j;
}

// tokenizer.json for a character-tokenizer model, for Hugging Face's fast
// tokenizers: zibert's normalisation as near as their normalizers go (NFKC,
// invisible characters and other controls dropped, whitespace runs one
// space, trimmed, lower-cased when the model is), one token per character,
// variants as second names of their characters' ids, [CLS] … [SEP].
nlohmann::json character_tokenizer_json(const Model& m) {
  const Vocab& v = m.tokenizer.vocab();
  const std::vector<std::string> tokens = v.tokens();
  // No added tokens: zibert reads "[MASK]" written in a text as its six characters, and an added
  // token would be matched in the raw text; the template refers to [CLS] and [SEP] by id.
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (std::size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  for (const auto& [from, to] : v.variants()) vocab[utf8_encode(from)] = v.id(to);
  nlohmann::json normalizers = {
      {{"type", "NFKC"}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "[\\p{Default_Ignorable_Code_Point}&&\\P{Cn}]"}}}, {"content", ""}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "[\\p{Cc}&&[^\\t\\n\\r\\x{0B}\\f\\x{85}]]"}}}, {"content", ""}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "[\\t\\n\\r\\x{0B}\\f\\x{85}\\x{2028}\\x{2029}\\p{Zs}]+"}}}, {"content", " "}},
      {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}};
  if (m.tokenizer.normalization().lowercase) normalizers.push_back({{"type", "Lowercase"}});
  auto special = [&](const char* name, std::int32_t id) {
    return nlohmann::json{{"id", name}, {"ids", {id}}, {"tokens", {name}}};
  };
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
          {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "."}}}, {"behavior", "Isolated"}, {"invert", false}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                        {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}},
            {"pair", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                      {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
                      {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 1}}}}}},
            {"special_tokens", {{"[CLS]", special("[CLS]", kCls)}, {"[SEP]", special("[SEP]", kSep)}}}}},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "[UNK]"}}}};
}

}  // namespace

void export_hf_checkpoint(const Model& m, const std::string& dir) {
  if (m.quantization)
    throw Error("an int8 model cannot be a Hugging Face checkpoint (transformers has no such weights); export the "
                "float32 model it was quantized from");
  if (m.config.tie_qk) throw Error("this model shares one projection for queries and keys, which BERT in transformers cannot");
  if (!m.config.position) throw Error("this model has no position embeddings, which BERT in transformers always has");
  const Bert<float>& net = m.net;
  // The reading channel folds into the word embeddings (word[id] + reading[id]
  // is what the network adds), unless a tied masked-LM decoder reads them.
  if (m.config.readings && m.config.task == Task::mlm && m.config.tie_decoder)
    throw Error("this encoder's reading channel cannot fold into word embeddings its masked-LM decoder shares");
  std::filesystem::create_directories(dir);
  // The tensors under their names; a calibrated classifier's divided by T, absent token types as zeros.
  std::vector<std::vector<float>> owned;
  owned.reserve(net.layout().size() + 2);  // the tensors point into them
  std::vector<TensorRef> tensors;
  for (const TensorInfo& t : net.layout()) {
    const float* data = net.params().data() + t.offset;
    if (m.classifier.calibration && t.name.starts_with("classifier.")) {
      owned.emplace_back(data, data + t.size);
      for (float& w : owned.back()) w = static_cast<float>(double(w) / m.classifier.calibration->temperature);
      data = owned.back().data();
    }
    if (t.name == "bert.embeddings.reading_embeddings.weight") continue;  // folded below
    if (t.name == "bert.embeddings.word_embeddings.weight" && m.config.readings) {
      owned.emplace_back(t.size);
      for (std::int64_t id = 0; id < m.config.vocab_size; ++id)
        net.embeddings().token(static_cast<std::int32_t>(id),
                               Eigen::Map<Eigen::RowVectorXf>(owned.back().data() + id * m.config.dim, m.config.dim));
      data = owned.back().data();
    }
    tensors.push_back({t.name, t.shape, data});
    if (t.name == "bert.embeddings.position_embeddings.weight" && m.config.type_vocab_size == 0) {
      owned.emplace_back(static_cast<std::size_t>(2 * m.config.dim), 0.0f);
      tensors.push_back({"bert.embeddings.token_type_embeddings.weight", {2, m.config.dim}, owned.back().data()});
    }
  }
  const std::vector<std::string> tokens =
      m.tokenizer.wordpiece() ? m.tokenizer.wordpiece()->tokens() : m.tokenizer.vocab().tokens();
  std::string vocab;
  for (const std::string& t : tokens) vocab += t + "\n";
  const std::string base = dir + "/";
  write_file_atomic(base + "vocab.txt", vocab);
  write_file_atomic(base + "tokenizer_config.json", tokenizer_config(m).dump(2) + "\n");
  if (m.tokenizer.kind() == TokenizerKind::character)
    write_file_atomic(base + "tokenizer.json", character_tokenizer_json(m).dump(2) + "\n");
  save_safetensors(base + "model.safetensors", {{"format", "pt"}}, tensors);
  write_file_atomic(base + "config.json", hf_config(m).dump(2) + "\n");
}

}  // namespace zibert
