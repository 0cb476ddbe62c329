// BERT's masking for the masked-LM objective: rates, specials, seeds.
#include <catch2/catch.hpp>

#include "zibert/base/random.hpp"
#include "zibert/text/vocab.hpp"
#include "zibert/train/masking.hpp"

using namespace zibert;

namespace {

// B sequences of [CLS] characters [SEP] [PAD]…, lengths varied.
Batch text_batch(Index size, Index seq, std::int64_t vocab, std::uint64_t seed) {
  Batch b;
  b.size = size;
  b.seq = seq;
  Rng rng(seed);
  for (Index s = 0; s < size; ++s) {
    const Index len = 3 + static_cast<Index>(rng.below(static_cast<std::uint64_t>(seq - 2)));
    for (Index t = 0; t < seq; ++t)
      b.ids.push_back(t == 0 ? kCls
                      : t < len - 1 ? static_cast<std::int32_t>(kNumSpecial + rng.below(vocab - kNumSpecial))
                      : t == len - 1 ? kSep : kPadId);
  }
  return b;
}

}  // namespace

TEST_CASE("15 % of the characters are chosen, and of those 80 % masked, 10 % random, 10 % kept", "[masking]") {
  const std::int64_t vocab = 3000;
  const Batch batch = text_batch(400, 128, vocab, 1);
  const MaskedBatch m = mask_tokens(batch, vocab, SpecialIds{}, 7, 1);
  std::int64_t characters = 0;
  for (std::int32_t id : batch.ids) characters += id >= kNumSpecial;
  REQUIRE(characters > 20000);
  REQUIRE(m.positions.size() == m.targets.size());
  const double chosen = double(m.positions.size()) / double(characters);
  CHECK(chosen == Approx(0.15).margin(0.01));
  std::int64_t masked = 0, kept = 0, replaced = 0;
  for (std::size_t i = 0; i < m.positions.size(); ++i) {
    const std::int32_t row = m.positions[i];
    CHECK(batch.ids[row] == m.targets[i]);
    CHECK(m.targets[i] >= kNumSpecial);  // never [PAD], [UNK], [CLS], [SEP] or [MASK]
    const std::int32_t now = m.batch.ids[row];
    if (now == kMask)
      ++masked;
    else if (now == m.targets[i])
      ++kept;
    else
      ++replaced;
    CHECK((now == kMask || (now >= kNumSpecial && now < vocab)));
    if (i > 0) CHECK(m.positions[i] > m.positions[i - 1]);
  }
  const double n = double(m.positions.size());
  CHECK(double(masked) / n == Approx(0.8).margin(0.02));
  CHECK(double(replaced) / n == Approx(0.1).margin(0.015));
  CHECK(double(kept) / n == Approx(0.1).margin(0.015));
  // Nothing else changed.
  std::size_t next = 0;
  for (std::size_t row = 0; row < batch.ids.size(); ++row) {
    if (next < m.positions.size() && static_cast<std::size_t>(m.positions[next]) == row) {
      ++next;
      continue;
    }
    CHECK(m.batch.ids[row] == batch.ids[row]);
  }
}

TEST_CASE("masks depend on seed and epoch only, not on how the batch is split", "[masking]") {
  const Batch batch = text_batch(12, 40, 500, 2);
  const MaskedBatch whole = mask_tokens(batch, 500, SpecialIds{}, 3, 5);
  CHECK(mask_tokens(batch, 500, SpecialIds{}, 3, 5).batch.ids == whole.batch.ids);
  CHECK(mask_tokens(batch, 500, SpecialIds{}, 3, 6).batch.ids != whole.batch.ids);  // afresh each epoch
  CHECK(mask_tokens(batch, 500, SpecialIds{}, 4, 5).batch.ids != whole.batch.ids);
  const MaskedBatch tail = mask_tokens(batch.part(5, 7), 500, SpecialIds{}, 3, 5);
  CHECK(std::vector<std::int32_t>(whole.batch.ids.begin() + 5 * 40, whole.batch.ids.end()) == tail.batch.ids);
  CHECK_THROWS(mask_tokens(batch, kNumSpecial, SpecialIds{}, 3, 5));
}
