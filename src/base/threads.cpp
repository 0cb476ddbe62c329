#include "zibert/base/threads.hpp"

#include <omp.h>

#include <Eigen/Core>

namespace zibert {

int apply_threads(int threads) {
  if (threads <= 0) threads = omp_get_num_procs();
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  return threads;
}

}  // namespace zibert
