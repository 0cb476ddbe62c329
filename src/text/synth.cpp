#include "zibert/text/synth.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>

#include "zibert/text/dataset.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {
namespace {

using Text = std::vector<char32_t>;

bool is_separator(char32_t c) {
  static const std::u32string kSeparators = U" \t\u00B7\u2022\u30FB\u201C\u201D\u300C\u300D\u300E\u300F\u300A\u300B\"'\u2018\u2019";
  return kSeparators.find(c) != std::u32string::npos;
}

// extra: the caller's own separators (SynthOptions::separators).
Text strip_separators(const Text& t, const Text& extra = {}) {
  Text out;
  for (char32_t c : t)
    if (!is_separator(c) && std::find(extra.begin(), extra.end(), c) == extra.end()) out.push_back(c);
  return out;
}

// A separator: one to three characters none of which is a letter or a digit
// (佛-跳-墙, 佛--跳--墙, 佛 . 跳 . 墙); Error otherwise.
Text separator_text(const std::string& s) {
  const Text t = utf8_decode(s);
  if (t.empty() || t.size() > 3)
    throw Error("synth: a separator must be one to three characters, not \"" + s + "\"");
  for (char32_t c : t) {
    const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    if ((cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
        (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO))
      throw Error("synth: a separator may not hold letters or digits, as \"" + s + "\" does");
  }
  return t;
}

// Every character of the separators given: what mentions() strips.
Text separator_chars(const std::vector<std::string>& separators) {
  Text out;
  for (const std::string& s : separators)
    for (char32_t c : separator_text(s))
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

bool contains(const Text& hay, const Text& needle) {
  return !needle.empty() && std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

Text insert_at(const Text& base, std::size_t at, const Text& piece) {
  Text out(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), piece.begin(), piece.end());
  out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(at), base.end());
  return out;
}

bool is_final_punct(char32_t c) { return c == U'。' || c == U'！' || c == U'？' || c == U'.' || c == U'!' || c == U'?'; }

enum class Kind { PosStart, PosMiddle, PosEnd, PosQuoted, PosSpaced, PosDish, NegPermutation, NegPartial,
                  NegSubstituted, NegScattered, NegNearMiss, NegPlain };
struct KindInfo {
  Kind kind;
  const char* name;
  double weight;
};
// Half positives, half negatives; hard negatives outweigh plain ones.
constexpr std::array<KindInfo, 12> kKinds{{{Kind::PosStart, "pos-start", 1.0},
                                           {Kind::PosMiddle, "pos-middle", 1.5},
                                           {Kind::PosEnd, "pos-end", 1.0},
                                           {Kind::PosQuoted, "pos-quoted", 1.0},
                                           {Kind::PosSpaced, "pos-spaced", 0.75},
                                           {Kind::PosDish, "pos-dish", 0.75},
                                           {Kind::NegPermutation, "neg-permutation", 1.0},
                                           {Kind::NegPartial, "neg-partial", 1.0},
                                           {Kind::NegSubstituted, "neg-substituted", 1.0},
                                           {Kind::NegScattered, "neg-scattered", 1.25},
                                           {Kind::NegNearMiss, "neg-near-miss", 1.25},
                                           {Kind::NegPlain, "neg-plain", 0.5}}};

class Generator {
 public:
  explicit Generator(const SynthOptions& o) : extra_(separator_chars(o.separators)) {
    for (const std::string& sep : o.separators) separators_.push_back(separator_text(sep));
    phrases_.push_back(utf8_decode(o.phrase));
    for (const auto& v : o.variants) phrases_.push_back(utf8_decode(v));
    for (const auto& p : phrases_)
      if (p.size() < 2) throw Error("synth: the phrase and its variants need at least two characters");
    for (const auto& n : o.near_misses) {
      Text t = utf8_decode(n);
      if (mentions_any(t)) throw Error("synth: near-miss \"" + n + "\" contains the phrase itself");
      near_.push_back(t);
    }
    for (const auto& d : o.dish_forms) {
      auto at = d.find("{}");
      if (at == std::string::npos) throw Error("synth: dish form \"" + d + "\" has no {} for the phrase");
      dishes_.emplace_back(utf8_decode(d.substr(0, at)), utf8_decode(d.substr(at + 2)));
    }
  }

  bool mentions_any(const Text& t) const {
    Text bare = strip_separators(t, extra_);
    for (const auto& p : phrases_)
      if (contains(bare, p)) return true;
    return false;
  }

  // One example of a randomly chosen kind; false when a negative could not be
  // made without mentioning the phrase.
  bool make(const Text& base, Rng& rng, SynthExample& out) {
    const KindInfo& k = pick_kind(rng);
    for (int attempt = 0; attempt < 20; ++attempt) {
      Text t = build(k.kind, base, rng);
      bool positive = k.kind <= Kind::PosDish;
      if (!positive && mentions_any(t)) continue;
      out = {positive ? "1" : "0", utf8_encode(t), k.name};
      return true;
    }
    return false;
  }

 private:
  const KindInfo& pick_kind(Rng& rng) {
    double total = 0;
    for (const auto& k : kKinds) total += k.weight;
    double u = rng.uniform() * total;
    for (const auto& k : kKinds) {
      if (u < k.weight) return k;
      u -= k.weight;
    }
    return kKinds.back();
  }

  const Text& phrase(Rng& rng) const { return phrases_[rng.below(phrases_.size())]; }

  std::size_t middle(const Text& base, Rng& rng) const {
    return base.size() < 2 ? base.size() : 1 + rng.below(base.size() - 1);
  }

  Text build(Kind kind, const Text& base, Rng& rng) const {
    std::size_t any = rng.below(base.size() + 1);
    switch (kind) {
      case Kind::PosStart: return insert_at(base, 0, phrase(rng));
      case Kind::PosMiddle: return insert_at(base, middle(base, rng), phrase(rng));
      case Kind::PosEnd: {
        std::size_t at = base.size();
        if (at > 0 && is_final_punct(base[at - 1])) --at;  // before the full stop
        return insert_at(base, at, phrase(rng));
      }
      case Kind::PosQuoted: {
        static const std::array<std::pair<char32_t, char32_t>, 3> kQuotes{
            {{U'\u201C', U'\u201D'}, {U'\u300C', U'\u300D'}, {U'\u300A', U'\u300B'}}};
        auto q = kQuotes[rng.below(kQuotes.size())];
        Text piece{q.first};
        const Text& p = phrase(rng);
        piece.insert(piece.end(), p.begin(), p.end());
        piece.push_back(q.second);
        return insert_at(base, any, piece);
      }
      case Kind::PosSpaced: {
        // Space or · (one draw, as before any extras existed), else any of them alike.
        const Text sep = separators_.empty() ? Text{rng.below(2) ? U' ' : U'\u00B7'} : [&] {
          std::vector<Text> all{{U'\u00B7'}, {U' '}};
          all.insert(all.end(), separators_.begin(), separators_.end());
          return all[rng.below(all.size())];
        }();
        Text piece;
        for (char32_t c : phrase(rng)) {
          if (!piece.empty()) piece.insert(piece.end(), sep.begin(), sep.end());
          piece.push_back(c);
        }
        return insert_at(base, any, piece);
      }
      case Kind::PosDish: {
        if (dishes_.empty()) return insert_at(base, any, phrase(rng));
        const auto& [pre, post] = dishes_[rng.below(dishes_.size())];
        Text piece = pre;
        const Text& p = phrase(rng);
        piece.insert(piece.end(), p.begin(), p.end());
        piece.insert(piece.end(), post.begin(), post.end());
        return insert_at(base, any, piece);
      }
      case Kind::NegPermutation: {
        Text p = phrase(rng);
        Text original = p;
        do {  // a random permutation other than the phrase itself
          for (std::size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
        } while (p == original);
        return insert_at(base, any, p);
      }
      case Kind::NegPartial: {
        const Text& p = phrase(rng);
        std::size_t len = p.size() - 1, start = rng.below(2);  // 佛跳 or 跳墙
        return insert_at(base, any, Text(p.begin() + static_cast<std::ptrdiff_t>(start),
                                         p.begin() + static_cast<std::ptrdiff_t>(start + len)));
      }
      case Kind::NegSubstituted: {
        // One character of the phrase replaced (佛吃墙, 佛跳门): the right
        // outline with the wrong content. The stand-in comes from the sentence.
        Text p = phrase(rng);
        Text candidates;
        for (char32_t c : base)
          if (c >= 0x4E00 && c <= 0x9FFF && std::find(p.begin(), p.end(), c) == p.end()) candidates.push_back(c);
        if (candidates.empty()) candidates = utf8_decode("的一是了不在人有我他这个们中来上大为和国地到以说时要就出会可也你对生");
        p[rng.below(p.size())] = candidates[rng.below(candidates.size())];
        return insert_at(base, any, p);
      }
      case Kind::NegScattered: {
        // The characters in order at distinct gaps of the base sentence, so
        // at least one base character stands between each pair.
        const Text& p = phrase(rng);
        if (base.size() + 1 < p.size()) return insert_at(base, any, Text{p[0]});
        std::vector<std::size_t> gaps(base.size() + 1);
        for (std::size_t i = 0; i < gaps.size(); ++i) gaps[i] = i;
        seeded_shuffle(gaps, rng.next());
        gaps.resize(p.size());
        std::sort(gaps.begin(), gaps.end());
        Text out;
        std::size_t prev = 0;
        for (std::size_t i = 0; i < p.size(); ++i) {
          out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(prev),
                     base.begin() + static_cast<std::ptrdiff_t>(gaps[i]));
          out.push_back(p[i]);
          prev = gaps[i];
        }
        out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(prev), base.end());
        return out;
      }
      case Kind::NegNearMiss:
        if (near_.empty()) return base;
        return insert_at(base, any, near_[rng.below(near_.size())]);
      case Kind::NegPlain: return base;
    }
    return base;
  }

  Text extra_;                   // every character of the caller's separators
  std::vector<Text> separators_;  // the caller's separators (SynthOptions::separators)
  std::vector<Text> phrases_, near_;
  std::vector<std::pair<Text, Text>> dishes_;
};

}  // namespace

bool mentions(const std::string& text, const std::vector<std::string>& phrases,
              const std::vector<std::string>& separators) {
  Text bare = strip_separators(utf8_decode(text), separator_chars(separators));
  for (const auto& p : phrases)
    if (contains(bare, utf8_decode(p))) return true;
  return false;
}

SynthCorpus synthesize(const std::vector<BaseSentence>& base, const SynthOptions& o) {
  if (o.phrase.empty()) throw Error("synth: --phrase is empty");
  if (o.dev_fraction + o.test_fraction >= 1.0) throw Error("synth: dev and test fractions leave nothing to train on");
  Generator gen(o);
  SynthCorpus corpus;
  std::vector<Text> texts;
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < base.size(); ++i) {
    texts.push_back(utf8_decode(base[i].text));
    if (texts.back().empty())
      ++corpus.skipped["empty"];
    else if (gen.mentions_any(texts.back()))
      ++corpus.skipped["already mentions the phrase"];
    else
      usable.push_back(i);
  }
  // Split the base sentences first: nothing generated from one sentence can
  // end up in two splits.
  seeded_shuffle(usable, o.seed);
  const std::size_t n_test = static_cast<std::size_t>(double(usable.size()) * o.test_fraction);
  const std::size_t n_dev = static_cast<std::size_t>(double(usable.size()) * o.dev_fraction);
  Rng rng(splitmix64(o.seed));
  for (std::size_t r = 0; r < usable.size(); ++r) {
    std::size_t i = usable[r];
    std::vector<SynthExample>& split = r < n_test ? corpus.test : r < n_test + n_dev ? corpus.dev : corpus.train;
    for (std::int64_t c = 0; c < o.copies; ++c) {
      SynthExample ex;
      if (!gen.make(texts[i], rng, ex)) {
        ++corpus.skipped["negative kept forming the phrase"];
        continue;
      }
      if (!base[i].tag.empty()) ex.category += "/" + base[i].tag;
      split.push_back(std::move(ex));
    }
  }
  return corpus;
}

}  // namespace zibert
