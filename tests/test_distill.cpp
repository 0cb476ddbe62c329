// zibert distill: the teachers' labelling and its cache, ensembles, teachers
// that read text otherwise than the student, resumption, and bad input. The
// loss and its gradient are checked in test_layers.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "helpers.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/safetensors.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/train/augment.hpp"
#include "zibert/train/distill.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

const std::string kHfFixtures = std::string(ZIBERT_TEST_DATA) + "/hf";
// The student's shape: smaller than the tiny teachers'.
const std::string kStudent = " --layers 1 --dim 8 --heads 2 --ffn 16 --max-len 16 --epochs 2 --batch 4 -q";

// Labelled lines in the tiny teachers' characters, and unlabelled ones.
void write_texts(const std::string& dir) {
  write_text(dir + "/train.tsv",
             "1\t他们点了一坛佛跳墙\n0\t一道名菜\n1\t佛跳墙是福建名菜\n0\t他们点了一道菜\n"
             "1\t一坛佛跳墙\n0\tabc 是一道菜\n");
  write_text(dir + "/dev.tsv", "1\t点了佛跳墙\n0\t一道福建菜\n1\t佛跳墙\n0\t他们\n");
  write_text(dir + "/texts.txt",
             "佛跳墙是一道菜\n他们点了\n一坛\n福建名菜佛跳墙\nabc\n是一道名菜\n他们点了一坛佛跳墙是一道福建名菜他们点了一坛\n"
             "墙\n佛跳\n一道\n");
}

std::string teacher_file(const std::string& dir, const std::string& name, std::uint64_t seed) {
  const std::string path = dir + "/" + name;
  save_model(path, tiny_classifier(seed));
  return path;
}

TeacherLogits cached(const std::string& path) {
  const std::string bytes = read_text(path);
  const SafeTensors st = decode_safetensors(bytes, path);
  const SafeTensor& t = st.tensors.at("logits");
  TeacherLogits out{t.shape[0], t.shape[1], t.shape[2], std::vector<float>(t.count)};
  t.copy_to(out.values.data());
  return out;
}

}  // namespace

TEST_CASE("soft targets are the mean over teachers of softmax(z / T)", "[distill]") {
  TeacherLogits z{2, 1, 3, {1.0f, 2.0f, 4.0f, 0.0f, 0.0f, -3.0f}};
  for (const double t : {1.0, 2.0, 5.0}) {
    const std::vector<float> p = soft_targets(z, t);
    REQUIRE(p.size() == 3);
    double a[3], b[3], sa = 0, sb = 0;
    for (int c = 0; c < 3; ++c) sa += a[c] = std::exp(z.values[c] / t), sb += b[c] = std::exp(z.values[3 + c] / t);
    for (int c = 0; c < 3; ++c) CHECK(p[c] == Approx((a[c] / sa + b[c] / sb) / 2).epsilon(1e-6));
  }
}

TEST_CASE("a teacher's logits are its network's: their softmax is its raw probabilities, short texts and long",
          "[distill]") {
  Model m = tiny_classifier(3);
  Predictor predictor(m);
  predictor.set_raw_probs(true);
  std::vector<std::vector<std::int32_t>> ids{m.tokenizer.encode("佛跳墙"), m.tokenizer.encode("他们点了一坛"),
                                             m.tokenizer.encode("他们点了一坛佛跳墙是一道福建名菜他们点了一坛佛跳墙")};
  const std::vector<float> z = predictor.logits(ids);
  const std::vector<Prediction> p = predictor.predict_ids(ids);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const double e0 = std::exp(z[2 * i]), e1 = std::exp(z[2 * i + 1]);
    CHECK(e1 / (e0 + e1) == Approx(p[i].probs[1]).epsilon(1e-5));
  }
}

TEST_CASE("texts are cut to what the student reads before a teacher sees them", "[distill]") {
  const Model m = tiny_classifier(1);  // max-len 16: 14 characters
  CHECK(cut_for_student("佛跳墙", m.tokenizer, 16) == "佛跳墙");
  CHECK(cut_for_student("一二三四五六七八九十一二三四五六七", m.tokenizer, 16) == "一二三四五六七八九十一二三四");
  CHECK(cut_for_student("ＡＢＣ", m.tokenizer, 5) == "ＡＢＣ");  // NFKC: one character each
}

TEST_CASE("distill trains a student, records its teachers, and reuses the teachers' logits until a teacher or a "
          "text changes", "[distill][cli]") {
  const std::string dir = temp_dir();
  write_texts(dir);
  const std::string a = teacher_file(dir, "a.safetensors", 1), b = teacher_file(dir, "b.safetensors", 2);
  const std::string common = " --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --text " + dir + "/texts.txt";
  RunResult r = run_zibert("distill --teacher " + a + common + " --out " + dir + "/s.safetensors" + kStudent);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model s = load_model(dir + "/s.safetensors");
  CHECK(s.config.layers == 1);
  CHECK(s.classifier.labels == std::vector<std::string>{"0", "1"});
  CHECK(s.training["distillation"]["teachers"] == nlohmann::json::array({"a.safetensors"}));
  CHECK(s.training["distillation"]["texts"] == 16);
  CHECK(s.training["distillation"]["gold_texts"] == 6);
  CHECK(s.training["distillation"]["temperature"] == 2.0);
  CHECK(run_zibert("info -m " + dir + "/s.safetensors").out.find("distilled   from a.safetensors") !=
        std::string::npos);
  // The cache holds the teacher's logits of every text, cut, in the run's order.
  const TeacherLogits z = cached(dir + "/s.safetensors.teacher-logits");
  REQUIRE(z.teachers == 1);
  REQUIRE(z.texts == 16);
  std::vector<std::string> texts{"他们点了一坛佛跳墙", "一道名菜", "佛跳墙是福建名菜", "他们点了一道菜", "一坛佛跳墙",
                                 "abc 是一道菜", "佛跳墙是一道菜", "他们点了", "一坛", "福建名菜佛跳墙", "abc",
                                 "是一道名菜", "他们点了一坛佛跳墙是一道福建", "墙", "佛跳", "一道"};
  CHECK(label_with_teachers({a}, load_model(a), texts, false).logits.values == z.values);

  // The same teachers and texts: the cache is read, and the same student comes out.
  r = run_zibert("distill --teacher " + a + common + " --out " + dir + "/s2.safetensors --cache " + dir +
                 "/s.safetensors.teacher-logits" + kStudent.substr(0, kStudent.size() - 3));
  REQUIRE(r.status == 0);
  CHECK(r.err.find("the teachers' logits for 16 texts from") != std::string::npos);
  CHECK(read_text(dir + "/s2.safetensors") == read_text(dir + "/s.safetensors"));
  // Another teacher, or another text: labelled again.
  r = run_zibert("distill --teacher " + b + common + " --out " + dir + "/s3.safetensors --cache " + dir +
                 "/s.safetensors.teacher-logits" + kStudent.substr(0, kStudent.size() - 3));
  REQUIRE(r.status == 0);
  CHECK(r.err.find("labelling 16 texts with 1 teacher") != std::string::npos);
  CHECK(cached(dir + "/s.safetensors.teacher-logits").values == label_with_teachers({b}, load_model(b), texts, false).logits.values);
  write_text(dir + "/texts.txt", "佛跳墙是一道菜\n他们点了\n");
  r = run_zibert("distill --teacher " + b + common + " --out " + dir + "/s4.safetensors --cache " + dir +
                 "/s.safetensors.teacher-logits" + kStudent.substr(0, kStudent.size() - 3));
  REQUIRE(r.status == 0);
  CHECK(r.err.find("labelling 8 texts with 1 teacher") != std::string::npos);
}

TEST_CASE("distill --augment: the teachers label the new texts too, the record counts them", "[distill][cli]") {
  const std::string dir = temp_dir();
  write_texts(dir);
  const std::string a = teacher_file(dir, "a.safetensors", 1);
  save_model(dir + "/enc.safetensors", tiny_encoder(1));
  RunResult r = run_zibert("distill --teacher " + a + " --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --text " +
                           dir + "/texts.txt --augment 2 --augment-with " + dir + "/enc.safetensors --out " + dir +
                           "/s.safetensors" + kStudent);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json d = load_model(dir + "/s.safetensors").training["distillation"];
  CHECK(d["texts"] == 6 + 12 + 10);
  CHECK(d["augmented_texts"] == 12);
  CHECK(d["augment_with"] == "enc.safetensors");
  CHECK(cached(dir + "/s.safetensors.teacher-logits").texts == 28);
  r = run_zibert("distill --teacher " + a + " --text " + dir + "/texts.txt --dev " + dir + "/dev.tsv --augment 1 --out " +
                 dir + "/t.safetensors" + kStudent);
  CHECK(r.status == 2);
  CHECK(r.err.find("--augment makes new texts from --data") != std::string::npos);
}

TEST_CASE("an ensemble of two teachers: both labellings cached, the student records both", "[distill][cli]") {
  const std::string dir = temp_dir();
  write_texts(dir);
  const std::string a = teacher_file(dir, "a.safetensors", 1), b = teacher_file(dir, "b.safetensors", 2);
  RunResult r = run_zibert("distill --teacher " + a + " --teacher " + b + " --data " + dir + "/train.tsv --dev " +
                           dir + "/dev.tsv --text " + dir + "/texts.txt --out " + dir + "/s.safetensors" + kStudent);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(load_model(dir + "/s.safetensors").training["distillation"]["teachers"] ==
        nlohmann::json::array({"a.safetensors", "b.safetensors"}));
  const TeacherLogits z = cached(dir + "/s.safetensors.teacher-logits");
  REQUIRE(z.teachers == 2);
  CHECK(std::vector<float>(z.row(0, 0), z.row(0, 0) + 2) != std::vector<float>(z.row(1, 0), z.row(1, 0) + 2));
  // Teachers whose labels differ: an error naming both files.
  Model other = tiny_classifier(3);
  other.classifier.labels = {"neg", "pos"};
  other.classifier.positive = "pos";
  save_model(dir + "/c.safetensors", other);
  r = run_zibert("distill --teacher " + a + " --teacher " + dir + "/c.safetensors --data " + dir + "/train.tsv --dev " +
                 dir + "/dev.tsv --out " + dir + "/t.safetensors" + kStudent);
  CHECK(r.status == 2);
  CHECK(r.err.find("the teachers disagree on the labels") != std::string::npos);
  CHECK(r.err.find("a.safetensors") != std::string::npos);
  CHECK(r.err.find("c.safetensors") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/t.safetensors"));
}

TEST_CASE("a WordPiece teacher (an imported Hugging Face classifier) teaches a character student", "[distill][cli][hf]") {
  const std::string dir = temp_dir();
  REQUIRE(run_zibert("import " + kHfFixtures + "/cls-safetensors --out " + dir + "/bert.safetensors").status == 0);
  write_text(dir + "/train.tsv", "正面\t佛跳墙是一道闽菜名肴\n负面\t我们点了一坛汤\n中性\t年夜饭的压轴\n正面\t好吃\n");
  write_text(dir + "/texts.txt", "佛跳墙好吃\n年夜饭\n我们点了一道菜\n闽菜名肴佛跳墙是压轴\n");
  RunResult r = run_zibert("distill --teacher " + dir + "/bert.safetensors --data " + dir + "/train.tsv --dev " + dir +
                           "/train.tsv --text " + dir + "/texts.txt --out " + dir + "/s.safetensors" + kStudent);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model s = load_model(dir + "/s.safetensors");
  CHECK(s.tokenizer.kind() == TokenizerKind::character);
  CHECK(s.classifier.labels == std::vector<std::string>{"负面", "中性", "正面"});  // the teacher's order
  CHECK(cached(dir + "/s.safetensors.teacher-logits").labels == 3);
  r = run_zibert("classify -m " + dir + "/s.safetensors " + dir + "/texts.txt");
  CHECK(lines_of(r.out).size() == 4);
}

TEST_CASE("distill --resume continues a stopped run into the same bytes", "[distill][cli][resume]") {
  const std::string dir = temp_dir();
  write_texts(dir);
  const std::string a = teacher_file(dir, "a.safetensors", 1);
  const std::string args = "--teacher " + a + " --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --text " + dir +
                           "/texts.txt --seed 7" + kStudent;
  REQUIRE(run_zibert("distill " + args + " --out " + dir + "/whole.safetensors").status == 0);
  interrupt_and_resume(args + " --out " + dir + "/resumed.safetensors", dir + "/run.ckpt", 3, "distill");
  CHECK(read_text(dir + "/resumed.safetensors") == read_text(dir + "/whole.safetensors"));
  // A distill checkpoint is not train's to continue, nor the other way round.
  RunResult stopped = run_zibert("distill " + args + " --out " + dir + "/x.safetensors --interrupt-at-step 2");
  REQUIRE(stopped.status == 130);
  RunResult r = run_zibert("train --resume " + dir + "/x.safetensors.ckpt");
  CHECK(r.status == 2);
  CHECK(r.err.find("a checkpoint of zibert distill") != std::string::npos);
}

TEST_CASE("distill's bad input: exit 2, one line, nothing written", "[distill][cli]") {
  const std::string dir = temp_dir();
  write_texts(dir);
  const std::string a = teacher_file(dir, "a.safetensors", 1);
  save_model(dir + "/enc.safetensors", tiny_encoder(1));
  Model multi = tiny_classifier(5);
  multi.config.multi_label = true;
  multi.classifier.positive.clear();
  save_model(dir + "/multi.safetensors", multi);
  write_text(dir + "/empty.txt", "\n  \n");
  const std::string out = " --out " + dir + "/s.safetensors";
  const std::string data = " --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv";
  struct Case {
    std::string args, says;
  } cases[] = {
      {"--teacher " + dir + "/enc.safetensors" + data + out + kStudent, "an encoder"},
      {"--teacher " + dir + "/multi.safetensors" + data + out + kStudent, "a multi-label classifier"},
      {"--teacher " + a + data + out + " --init " + dir + "/enc.safetensors --layers 3", "--layers"},
      {"--teacher " + a + data + " --text " + dir + "/empty.txt" + out + kStudent, "empty.txt"},
      {"--teacher " + a + " --text " + dir + "/texts.txt" + out + kStudent, "--dev"},
      {data + out + kStudent, "--teacher"},
      {"--teacher " + a + data + out + " --cache " + dir + "/train.tsv" + kStudent, "train.tsv"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    RunResult r = run_zibert("distill " + c.args);
    CHECK(r.status == 2);
    CHECK(lines_of(r.err).size() == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/s.safetensors"));
    CHECK_FALSE(std::filesystem::exists(dir + "/s.safetensors.teacher-logits"));
  }
  // A label the teachers do not have: named with its file and line.
  write_text(dir + "/odd.tsv", "1\t佛跳墙\nmaybe\t一道菜\n");
  RunResult r = run_zibert("distill --teacher " + a + " --data " + dir + "/odd.tsv --dev " + dir + "/dev.tsv" + out + kStudent);
  CHECK(r.status == 2);
  CHECK(r.err.find("odd.tsv:2") != std::string::npos);
}

TEST_CASE("augmentation: copies per text, deterministic, from an encoder's guesses or by deletion", "[distill]") {
  const Model encoder = tiny_encoder(1);
  const std::vector<std::string> texts{"他们点了一坛佛跳墙", "一道名菜", "墙"};
  AugmentOptions o;
  o.copies = 3;
  o.share = 0.3;
  const std::vector<std::string> a = augment_texts(texts, o, &encoder);
  REQUIRE(a.size() == 9);
  CHECK(augment_texts(texts, o, &encoder) == a);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& from = texts[i / 3];
    INFO(from << " -> " << a[i]);
    CHECK(a[i] != from);  // at least one character replaced, never by itself
    CHECK(utf8_decode(a[i]).size() == utf8_decode(from).size());
    CHECK(a[i].find("[") == std::string::npos);  // no special is ever a guess
  }
  const std::vector<std::string> d = augment_texts(texts, o, nullptr);
  REQUIRE(d.size() == 9);
  for (std::size_t i = 0; i < d.size(); ++i) CHECK(utf8_decode(d[i]).size() < utf8_decode(texts[i / 3]).size());
  o.seed = 7;
  CHECK(augment_texts(texts, o, nullptr) != d);
  const Model classifier = tiny_classifier(1);
  CHECK_THROWS_WITH(augment_texts(texts, o, &classifier), Catch::Contains("a character encoder"));
}
