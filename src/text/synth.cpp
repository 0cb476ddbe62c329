#include "zibert/text/synth.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "zibert/text/dataset.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"
#include "zibert/text/mentions.hpp"
#include "zibert/text/sound_alike.hpp"
#include "zibert/text/tokenizer.hpp"
#include "synth_pieces.hpp"

namespace zibert {
namespace {

using Text = std::vector<char32_t>;
using synth_pieces::has_latin;
using synth_pieces::insert_at;
using synth_pieces::is_final_punct;
using synth_pieces::kQuoteMarks;
using synth_pieces::quoted;
using synth_pieces::spaced_apart;

// Stand-ins for neg-substituted when the sentence has no Chinese character to lend.
constexpr std::u32string_view kCommonChars = U"的一是了不在人有我他这个们中来上大为和国地到以说时要就出会可也你对生";

enum class Kind { PosStart, PosMiddle, PosEnd, PosQuoted, PosSpaced, PosDish, PosHomophone, PosNearHomophone,
                  PosPinyin, PosAlias, NegPermutation, NegPartial, NegSubstituted, NegScattered, NegNearMiss,
                  NegNotInside, NegPartialHomophone, NegPartialPinyin, NegPlain };
bool is_positive(Kind k) { return k <= Kind::PosAlias; }
// The literal forms: the phrase's own characters, which mentions_any finds.
bool is_literal(Kind k) { return k <= Kind::PosDish; }
struct KindInfo {
  Kind kind;
  const char* name;
  double weight;
};
// Half positives, half negatives; hard negatives outweigh plain ones. The
// kinds of weight 0 take a share of their side when what they need is given
// (Generator's weights): a share of the positives from SynthOptions, of the
// negatives the fixed one here.
constexpr double kNotInsideShare = 0.08, kPartialHomophoneShare = 0.05, kPartialPinyinShare = 0.04;
constexpr std::array<KindInfo, 19> kKinds{{{Kind::PosStart, "pos-start", 1.0},
                                           {Kind::PosMiddle, "pos-middle", 1.5},
                                           {Kind::PosEnd, "pos-end", 1.0},
                                           {Kind::PosQuoted, "pos-quoted", 1.0},
                                           {Kind::PosSpaced, "pos-spaced", 0.75},
                                           {Kind::PosDish, "pos-dish", 0.75},
                                           {Kind::PosHomophone, "pos-homophone", 0.0},
                                           {Kind::PosNearHomophone, "pos-near-homophone", 0.0},
                                           {Kind::PosPinyin, "pos-pinyin", 0.0},
                                           {Kind::PosAlias, "pos-alias", 0.0},
                                           {Kind::NegPermutation, "neg-permutation", 1.0},
                                           {Kind::NegPartial, "neg-partial", 1.0},
                                           {Kind::NegSubstituted, "neg-substituted", 1.0},
                                           {Kind::NegScattered, "neg-scattered", 1.25},
                                           {Kind::NegNearMiss, "neg-near-miss", 1.25},
                                           {Kind::NegNotInside, "neg-not-inside", 0.0},
                                           {Kind::NegPartialHomophone, "neg-partial-homophone", 0.0},
                                           {Kind::NegPartialPinyin, "neg-partial-pinyin", 0.0},
                                           {Kind::NegPlain, "neg-plain", 0.5}}};

// Every name that counts as the phrase: the phrase, its variants, the aliases.
std::vector<std::string> names(const SynthOptions& o) {
  std::vector<std::string> all{o.phrase};
  all.insert(all.end(), o.variants.begin(), o.variants.end());
  all.insert(all.end(), o.aliases.begin(), o.aliases.end());
  return all;
}

class Generator {
 public:
  explicit Generator(const SynthOptions& o) : options_(o), is_mention_(names(o), o.separators, o.not_inside) {
    for (const std::string& sep : o.separators) separators_.push_back(separator_text(sep));
    phrases_.push_back(utf8_decode(o.phrase));
    for (const auto& v : o.variants) phrases_.push_back(utf8_decode(v));
    for (const auto& p : phrases_)
      if (p.size() < 2) throw Error("synth: the phrase and its variants need at least two characters");
    for (const auto& a : o.aliases) {
      aliases_.push_back(utf8_decode(a));
      if (is_mention_.bare(aliases_.back()).size() < 2) throw Error("synth: alias \"" + a + "\" is too short");
    }
    for (const auto& n : o.not_inside) not_inside_.push_back(utf8_decode(n));
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
    for (const auto& h : o.held_out) {
      const Text t = utf8_decode(h);
      held_out_.insert(held_out_.end(), t.begin(), t.end());
    }
    try {
      reading_ = PhraseReading::given(o.pinyin);
    } catch (const Error& e) {
      throw Error(std::string("synth: ") + e.what());
    }
    if (!reading_.empty() && reading_.size() != phrases_[0].size())
      throw Error("synth: --pinyin gives " + std::to_string(reading_.size()) + " syllables for the " +
                  std::to_string(phrases_[0].size()) + " characters of " + o.phrase);
    for (double share : {o.homophone_share, o.near_homophone_share, o.pinyin_share, o.alias_share})
      if (!(share >= 0 && share < 1)) throw Error("synth: a kind's share must be at least 0 and below 1");
  }

  // After the base sentences are known: their character counts weigh the
  // homophones drawn, and each kind's weight follows from what is given.
  void prepare(const std::unordered_map<char32_t, std::int64_t>& frequency) {
    const SynthOptions& o = options_;
    if (o.readings)
      for (const Text& p : phrases_) {
        // The readings given (fo/fu), or else PhraseSounds takes each character's readings today.
        std::vector<std::vector<std::string>> syllables;
        if (!reading_.empty() && p.size() == reading_.size()) syllables = reading_.ways();
        // A variant's character in its place is no typo (牆 for 墙): never drawn.
        Text held = held_out_;
        for (const Text& q : phrases_)
          for (char32_t c : q)
            if (std::find(p.begin(), p.end(), c) == p.end()) held.push_back(c);
        sounds_.push_back(std::make_unique<PhraseSounds>(p, syllables, *o.readings, frequency, held));
      }
    if (reading_.empty() && o.readings) {  // the reading from the table, when each character has one
      std::vector<std::string> table;
      for (char32_t c : phrases_[0]) {
        const std::vector<std::string>& s = o.readings->syllables(c, Readings::Use::today);
        if (s.size() != 1) {
          notes_.push_back("pos-pinyin is off: " + utf8_encode(Text{c}) + " has " + std::to_string(s.size()) +
                           " readings today; give the phrase's with --pinyin");
          table.clear();
          break;
        }
        table.push_back(s[0]);
      }
      reading_ = PhraseReading(std::move(table));
    }
    const bool homophones = !sounds_.empty() && !sounds_[0]->positions(PhraseSounds::Alike::same).empty();
    const bool near = !sounds_.empty() && !sounds_[0]->positions(PhraseSounds::Alike::near).empty();
    if (!o.readings && (o.homophone_share > 0 || o.near_homophone_share > 0))
      notes_.push_back("pos-homophone and pos-near-homophone are off: no readings table");
    double pos_share = 0, neg_share = 0;
    for (const KindInfo& k : kKinds) {
      double share = 0;
      switch (k.kind) {
        case Kind::PosHomophone: share = homophones ? o.homophone_share : 0; break;
        case Kind::PosNearHomophone: share = near ? o.near_homophone_share : 0; break;
        case Kind::PosPinyin: share = reading_.empty() ? 0 : o.pinyin_share; break;
        case Kind::PosAlias: share = aliases_.empty() ? 0 : o.alias_share; break;
        case Kind::NegNotInside: share = not_inside_.empty() ? 0 : kNotInsideShare; break;
        case Kind::NegPartialHomophone: share = homophones && o.homophone_share > 0 ? kPartialHomophoneShare : 0; break;
        case Kind::NegPartialPinyin: share = reading_.empty() || o.pinyin_share == 0 ? 0 : kPartialPinyinShare; break;
        default: break;
      }
      (is_positive(k.kind) ? pos_share : neg_share) += share;
      shares_.push_back(share);
    }
    if (pos_share >= 1) throw Error("synth: the shares of the positive kinds add up to 1 or more");
    double pos_total = 0, neg_total = 0;  // the weights of the literal kinds, the same with or without the others
    for (const KindInfo& k : kKinds) (is_positive(k.kind) ? pos_total : neg_total) += k.weight;
    for (std::size_t i = 0; i < kKinds.size(); ++i) {
      const bool pos = is_positive(kKinds[i].kind);
      const double scale = 1.0 - (pos ? pos_share : neg_share), side = pos ? pos_total : neg_total;
      weights_.push_back(kKinds[i].weight > 0 ? kKinds[i].weight * scale : shares_[i] * side);
    }
  }

  const std::vector<std::string>& notes() const { return notes_; }

  bool mentions_any(const Text& t) const { return is_mention_(t); }
  // A typo's form of the phrase or a variant (佛跳強, 福跳墙), separators aside.
  bool heard_in(const Text& t) const {
    if (sounds_.empty()) return false;
    const Text bare = is_mention_.bare(t);
    for (const auto& s : sounds_)
      if (s->heard_in(bare)) return true;
    return false;
  }

  // One example of a randomly chosen kind; false when a negative could not be
  // made without mentioning the phrase (or a positive only next to a
  // --not-inside string).
  bool make(const Text& base, Rng& rng, SynthExample& out) {
    const KindInfo& k = pick_kind(rng);
    for (int attempt = 0; attempt < 20; ++attempt) {
      Text t = build(k.kind, base, rng);
      const bool positive = is_positive(k.kind);
      if (!positive && (mentions_any(t) || heard_in(t))) continue;
      if ((k.kind == Kind::PosAlias || (is_literal(k.kind) && !not_inside_.empty())) && !mentions_any(t)) continue;
      out = {positive ? "1" : "0", utf8_encode(t), k.name};
      return true;
    }
    return false;
  }

 private:
  const KindInfo& pick_kind(Rng& rng) {
    double total = 0;
    for (double w : weights_) total += w;
    double u = rng.uniform() * total;
    for (std::size_t i = 0; i < kKinds.size(); ++i) {
      if (u < weights_[i]) return kKinds[i];
      u -= weights_[i];
    }
    return kKinds.back();
  }

  std::size_t phrase_index(Rng& rng) const { return rng.below(phrases_.size()); }
  const Text& phrase(Rng& rng) const { return phrases_[phrase_index(rng)]; }

  std::size_t middle(const Text& base, Rng& rng) const {
    return base.size() < 2 ? base.size() : 1 + rng.below(base.size() - 1);
  }

  Text alias_part(Rng& rng) const {
    const Text& a = aliases_[rng.below(aliases_.size())];
    return synth_pieces::shortened(a, rng.below(2));
  }

  bool sounds_alike(std::size_t phrase_index, std::size_t at, char32_t c) const {
    return phrase_index < sounds_.size() && sounds_[phrase_index]->sounds_like(at, c);
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
        const std::size_t mark = rng.below(kQuoteMarks);
        return insert_at(base, any, quoted(phrase(rng), mark));
      }
      case Kind::PosSpaced: {
        // Space or · (one draw, as before any extras existed), else any of them alike.
        const Text sep = separators_.empty() ? Text{rng.below(2) ? U' ' : U'\u00B7'} : [&] {
          std::vector<Text> all{{U'\u00B7'}, {U' '}};
          all.insert(all.end(), separators_.begin(), separators_.end());
          return all[rng.below(all.size())];
        }();
        return insert_at(base, any, synth_pieces::joined(phrase(rng), sep));
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
        return insert_at(base, any, synth_pieces::permuted(phrase(rng), rng));
      }
      case Kind::NegPartial: {
        // With aliases, a third of the time an alias cut short: its first or
        // last word (jumps over the wall) or character (福寿) left out.
        if (!aliases_.empty() && rng.below(3) == 0) return insert_at(base, any, alias_part(rng));
        const Text& p = phrase(rng);
        std::size_t len = p.size() - 1, start = rng.below(2);  // 佛跳 or 跳墙
        return insert_at(base, any, Text(p.begin() + static_cast<std::ptrdiff_t>(start),
                                         p.begin() + static_cast<std::ptrdiff_t>(start + len)));
      }
      case Kind::NegSubstituted: {
        // One character of the phrase replaced (佛吃墙, 佛跳门): the right
        // outline with the wrong content. The stand-in comes from the
        // sentence, and never sounds like the character it replaces: that
        // would be a positive's typo (佛跳強).
        const std::size_t pi = phrase_index(rng);
        Text p = phrases_[pi];
        Text candidates;
        for (char32_t c : base)
          if (c >= 0x4E00 && c <= 0x9FFF && std::find(p.begin(), p.end(), c) == p.end()) candidates.push_back(c);
        if (candidates.empty()) candidates = Text(kCommonChars.begin(), kCommonChars.end());
        const char32_t pick = candidates[rng.below(candidates.size())];
        const std::size_t at = rng.below(p.size());
        p[at] = pick;
        if (sounds_alike(pi, at, pick)) {
          Text unlike;
          for (char32_t c : candidates)
            if (!sounds_alike(pi, at, c)) unlike.push_back(c);
          if (unlike.empty())
            for (char32_t c : kCommonChars)
              if (!sounds_alike(pi, at, c) && std::find(p.begin(), p.end(), c) == p.end()) unlike.push_back(c);
          p[at] = unlike[rng.below(unlike.size())];
        }
        return insert_at(base, any, p);
      }
      case Kind::NegScattered: {
        const Text& p = phrase(rng);
        if (base.size() + 1 < p.size()) return insert_at(base, any, Text{p[0]});
        return synth_pieces::scattered(base, p, rng);
      }
      case Kind::PosHomophone:
      case Kind::PosNearHomophone: {
        // One character replaced by one read the same (佛跳強), or one usual confusion away.
        const auto alike = kind == Kind::PosHomophone ? PhraseSounds::Alike::same : PhraseSounds::Alike::near;
        std::size_t pi = phrase_index(rng);
        if (sounds_[pi]->positions(alike).empty()) pi = 0;  // a variant without any: the phrase's own
        const std::vector<std::size_t>& at = sounds_[pi]->positions(alike);
        Text p = phrases_[pi];
        const std::size_t i = at[rng.below(at.size())];
        p[i] = sounds_[pi]->draw(i, alike, rng);
        return insert_at(base, any, p);
      }
      case Kind::PosPinyin: return insert_at(base, any, spaced_apart(pinyin_piece(0, reading_.size(), rng), rng));
      case Kind::PosAlias: {
        // As the phrase is used: plain, quoted or spaced; a Latin name's case varied.
        const Text& a = aliases_[rng.below(aliases_.size())];
        if (has_latin(a)) {
          const int style = static_cast<int>(rng.below(4));  // as given, lower, UPPER, Title Case
          return insert_at(base, any, spaced_apart(synth_pieces::latin_case(a, style), rng));
        }
        switch (rng.below(3)) {
          case 0: return insert_at(base, any, quoted(a, rng.below(kQuoteMarks)));
          case 1: {
            const Text sep{rng.below(2) ? U' ' : U'\u00B7'};
            return insert_at(base, any, synth_pieces::joined(a, sep));
          }
          default: return insert_at(base, any, a);
        }
      }
      case Kind::NegNotInside: {
        // The phrase inside a longer word that is something else (红烧肉丸子汤).
        const Text& p = phrase(rng);
        const Text& n = not_inside_[rng.below(not_inside_.size())];
        const bool phrase_first = rng.below(2);
        Text piece = phrase_first ? p : n;
        const Text& second = phrase_first ? n : p;
        piece.insert(piece.end(), second.begin(), second.end());
        return insert_at(base, any, piece);
      }
      case Kind::NegPartialHomophone: {
        // Part of the phrase with a homophone in it (佛眺, 跳蔷): sounds like a piece, is none.
        std::size_t pi = phrase_index(rng);
        Text p = phrases_[pi];
        const std::size_t start = rng.below(2), len = p.size() - 1;
        std::vector<std::size_t> at;
        for (std::size_t i : sounds_[pi]->positions(PhraseSounds::Alike::same))
          if (i >= start && i < start + len) at.push_back(i);
        if (!at.empty()) {
          const std::size_t i = at[rng.below(at.size())];
          p[i] = sounds_[pi]->draw(i, PhraseSounds::Alike::same, rng);
        }
        return insert_at(base, any, Text(p.begin() + static_cast<std::ptrdiff_t>(start),
                                         p.begin() + static_cast<std::ptrdiff_t>(start + len)));
      }
      case Kind::NegPartialPinyin: {
        // Part of the reading (tiaoqiang): not the whole name.
        const std::size_t start = rng.below(2);
        return insert_at(base, any, spaced_apart(pinyin_piece(start, reading_.size() - 1, rng), rng));
      }
      case Kind::NegNearMiss:
        if (near_.empty()) return base;
        return insert_at(base, any, near_[rng.below(near_.size())]);
      case Kind::NegPlain: return base;
    }
    return base;
  }

  const SynthOptions& options_;
  MentionMatcher is_mention_;     // the phrase, its variants and aliases
  std::vector<Text> separators_;  // the caller's separators (SynthOptions::separators)
  std::vector<Text> phrases_, near_, aliases_;
  std::vector<Text> not_inside_;  // the --not-inside strings
  Text held_out_;                 // characters never drawn as homophones
  // Syllables [start, start + count) as a pinyin keyboard's user writes them.
  Text pinyin_piece(std::size_t start, std::size_t count, Rng& rng) const {
    return utf8_decode(reading_.piece(start, count, options_.pinyin_initials, rng));
  }

  PhraseReading reading_;  // the phrase's, for the pinyin kinds (empty: off)
  std::vector<std::unique_ptr<PhraseSounds>> sounds_;  // per phrase and variant, with a readings table
  std::vector<double> shares_, weights_;               // per kind
  std::vector<std::string> notes_;
  std::vector<std::pair<Text, Text>> dishes_;
};

}  // namespace

SynthCorpus synthesize(const std::vector<BaseSentence>& base, const SynthOptions& o) {
  if (o.phrase.empty()) throw Error("synth: --phrase is empty");
  if (o.dev_fraction + o.test_fraction >= 1.0) throw Error("synth: dev and test fractions leave nothing to train on");
  Generator gen(o);
  SynthCorpus corpus;
  std::unordered_map<char32_t, std::int64_t> frequency;  // of the characters of the sentences used
  std::vector<Text> texts;
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < base.size(); ++i) {
    texts.push_back(utf8_decode(base[i].text));
    if (texts.back().empty())
      ++corpus.skipped["empty"];
    else if (gen.mentions_any(texts.back()))
      ++corpus.skipped["already mentions the phrase"];
    else {
      usable.push_back(i);
      for (char32_t c : texts.back()) ++frequency[c];
    }
  }
  gen.prepare(frequency);
  corpus.notes = gen.notes();
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
