#include "zibert/base/world.hpp"

#include <cstdlib>
#include <cstring>

#include "zibert/base/error.hpp"

#ifdef ZIBERT_MPI
#include <mpi.h>
#endif

namespace zibert {
namespace {

World& the_world() {
  static World w;
  return w;
}

// Set by Open MPI's launcher (mpirun, prterun) in each rank's environment.
int launched_ranks() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size ? std::atoi(size) : 0;
}

#ifdef ZIBERT_MPI
template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("MPI: ") + what + " failed");
}
#endif

}  // namespace

bool World::compiled_with_mpi() {
#ifdef ZIBERT_MPI
  return true;
#else
  return false;
#endif
}

void World::init(int& argc, char**& argv) {
  World& w = the_world();
  if (launched_ranks() == 0) return;
#ifdef ZIBERT_MPI
  check(MPI_Init(&argc, &argv), "MPI_Init");
  w.started_ = true;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.size_), "MPI_Comm_size");
#else
  (void)argc;
  (void)argv;
  (void)w;
  if (launched_ranks() > 1)
    throw Error("started by mpirun, but this zibert is built without MPI (install libopenmpi-dev and build again)");
#endif
}

void World::finalize() {
#ifdef ZIBERT_MPI
  if (the_world().started_) MPI_Finalize();
#endif
}

const World& World::get() { return the_world(); }

template <class T>
void World::chain_sum(T* buf, std::size_t n, const std::function<void(T*)>& add) const {
  if (size_ == 1) {
    add(buf);
    return;
  }
#ifdef ZIBERT_MPI
  const int count = static_cast<int>(n);
  if (rank_ > 0) check(MPI_Recv(buf, count, mpi_type<T>(), rank_ - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  add(buf);
  if (rank_ + 1 < size_) check(MPI_Send(buf, count, mpi_type<T>(), rank_ + 1, 0, MPI_COMM_WORLD), "MPI_Send");
  check(MPI_Bcast(buf, count, mpi_type<T>(), size_ - 1, MPI_COMM_WORLD), "MPI_Bcast");
#else
  (void)n;
#endif
}

int World::max(int value) const {
  if (size_ == 1) return value;
  int out = value;
#ifdef ZIBERT_MPI
  check(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
#endif
  return out;
}

std::vector<std::string> World::all_strings(const std::string& mine) const {
  if (size_ == 1) return {mine};
  std::vector<std::string> out;
#ifdef ZIBERT_MPI
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size_; ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
  for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
#endif
  return out;
}

void World::abort(int status) const {
#ifdef ZIBERT_MPI
  if (started_) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::exit(status);
}

template void World::chain_sum<float>(float*, std::size_t, const std::function<void(float*)>&) const;
template void World::chain_sum<double>(double*, std::size_t, const std::function<void(double*)>&) const;

}  // namespace zibert
