#include "zibert/infer/fast_forward.hpp"

#include <omp.h>

#include <exception>

namespace zibert {

template <class T>
void predict_batches(const Bert<T>& net, const std::vector<Batch>& batches, std::vector<ModelCache<T>>& caches,
                     const std::function<void(std::size_t, const CMatMap<T>&)>& take, const EmbeddingTables<T>* tables) {
  const int threads = omp_get_max_threads();
  if (static_cast<int>(caches.size()) < threads) caches.resize(threads);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(batches.size());
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic) if (n > 1)
  for (std::ptrdiff_t b = 0; b < n; ++b) {
    try {
      take(static_cast<std::size_t>(b), net.predict(batches[b], caches[omp_get_thread_num()], tables));
    } catch (...) {
#pragma omp critical(zibert_predict_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template void predict_batches<float>(const Bert<float>&, const std::vector<Batch>&, std::vector<ModelCache<float>>&,
                                     const std::function<void(std::size_t, const CMatMap<float>&)>&,
                                     const EmbeddingTables<float>*);
template void predict_batches<double>(const Bert<double>&, const std::vector<Batch>&, std::vector<ModelCache<double>>&,
                                      const std::function<void(std::size_t, const CMatMap<double>&)>&,
                                      const EmbeddingTables<double>*);

}  // namespace zibert
