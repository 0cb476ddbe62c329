// DESIGN §6.5: no allocation inside the training step. The test binary
// counts every malloc-family call (linked with --wrap, tests/CMakeLists.txt)
// and every operator new, and a step after the first ones must make none.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "helpers.hpp"
#include "zibert/base/random.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/train/trainer.hpp"

#if defined(ZIBERT_COUNT_ALLOCATIONS)
namespace {
std::atomic<long> g_allocations{0};
}
extern "C" {
void* __real_malloc(std::size_t);
void* __real_calloc(std::size_t, std::size_t);
void* __real_realloc(void*, std::size_t);
int __real_posix_memalign(void**, std::size_t, std::size_t);
void* __real_aligned_alloc(std::size_t, std::size_t);
void* __wrap_malloc(std::size_t n) {
  ++g_allocations;
  return __real_malloc(n);
}
void* __wrap_calloc(std::size_t n, std::size_t size) {
  ++g_allocations;
  return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, std::size_t n) {
  ++g_allocations;
  return __real_realloc(p, n);
}
int __wrap_posix_memalign(void** p, std::size_t align, std::size_t n) {
  ++g_allocations;
  return __real_posix_memalign(p, align, n);
}
void* __wrap_aligned_alloc(std::size_t align, std::size_t n) {
  ++g_allocations;
  return __real_aligned_alloc(align, n);
}
}
// operator new, wherever it is called from (the standard library's own
// containers included), goes through the counted malloc.
void* operator new(std::size_t n) {
  if (void* p = __wrap_malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  void* p = nullptr;
  if (__wrap_posix_memalign(&p, std::max(sizeof(void*), static_cast<std::size_t>(a)), n ? n : 1) != 0)
    throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif

using namespace zibert;
using namespace zibert::test;

TEST_CASE("a training step allocates nothing once its buffers have grown", "[model][training]") {
#if !defined(ZIBERT_COUNT_ALLOCATIONS)
  WARN("this build does not count allocations (the sanitizers count their own); skipped");
#else
  const ModelConfig cfg = model_shape(40, 24, 32, 4, 64, 2, 2, 0.1);
  Bert<float> net(cfg);
  net.init_weights(3);
  AdamW<float> adam(AdamWConfig{}, net.layout());
  Rng rng(5);
  std::vector<std::vector<std::int32_t>> seqs;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 16; ++i) {
    std::vector<std::int32_t> ids(3 + rng.below(18));
    for (auto& id : ids) id = static_cast<std::int32_t>(kNumSpecial + rng.below(cfg.vocab_size - kNumSpecial));
    seqs.push_back(with_specials(ids, cfg.max_len, SpecialIds{}));
    labels.push_back(static_cast<std::int32_t>(rng.below(2)));
  }
  std::vector<const std::vector<std::int32_t>*> ptrs;
  for (const auto& s : seqs) ptrs.push_back(&s);
  const Batch batch = pack_batch(ptrs, labels);
  const int parts = GENERATE(1, 2), rounds = GENERATE(1, 2);
  DataParallel<float> runner(parts, rounds);
  std::uint64_t step = 0;
  auto one_step = [&] {
    DropoutRng drop{9, step++, cfg.dropout};
    return train_step(net, adam, runner, batch, drop, 1e-3);
  };
  for (int i = 0; i < 3; ++i) one_step();  // buffers grow to this batch's shape
  const long before = g_allocations.load();
  float losses[3];
  for (float& loss : losses) loss = one_step();  // Catch's own checks allocate: none in here
  const long made = g_allocations.load() - before;
  INFO(parts << " part(s), " << rounds << " round(s)");
  CHECK(made == 0);
  for (float loss : losses) CHECK(std::isfinite(loss));
#endif
}
