// How many threads a command computes on: OpenMP's and Eigen's.
#pragma once

namespace zibert {

// Sets OpenMP's and Eigen's thread counts (0 = all cores); returns the count used.
int apply_threads(int threads);

}  // namespace zibert
