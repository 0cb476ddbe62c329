// base/world compiled without MPI, as in a zibert built where libopenmpi-dev
// is missing: started by mpirun, World::init must refuse, and main prints
// the error and exits 2 as zibert's main does. Run by CTest under mpirun
// (or with mpirun's environment when Open MPI is not installed).
#include <cstdio>

#include "zibert/base/world.hpp"

int main(int argc, char** argv) {
  if (zibert::World::compiled_with_mpi()) {
    std::fputs("world_without_mpi: compiled with MPI, which this test must not be\n", stderr);
    return 1;
  }
  try {
    zibert::World::init(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zibert: error: %s\n", e.what());
    return 2;
  }
  std::puts("one process");  // not started by mpirun: runs as one process
  zibert::World::finalize();
  return 0;
}
