// The processes a run is spread over: mpirun's ranks when zibert
// is built with MPI (find_package(MPI): libopenmpi-dev) and started by
// mpirun, else this process alone. Training sums its gradients over them
// in a fixed order, so a run over R ranks of T threads gives the bits of
// one process of R·T threads.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace zibert {

class World {
 public:
  // Starts MPI when this process was launched by mpirun (an Open MPI rank);
  // a no-op otherwise. Throws Error when mpirun started a binary built
  // without MPI. Call once, first thing in main.
  static void init(int& argc, char**& argv);
  static void finalize();  // MPI_Finalize when init started MPI
  static const World& get();
  static bool compiled_with_mpi();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  bool leader() const { return rank_ == 0; }  // reads like the only process: prints, writes files

  // An ordered sum over the ranks: buf enters rank 0 as it is, each rank in
  // turn (0, 1, …) receives the running sum, lets add() add its own terms
  // to it, and passes it on; the last rank's result is then every rank's.
  // The additions happen in the order a single process would make them.
  template <class T>
  void chain_sum(T* buf, std::size_t n, const std::function<void(T*)>& add) const;
  // The largest of the ranks' values (stop requests: every rank stops at the same step).
  int max(int value) const;
  // Every rank's string, in rank order (start-up checks).
  std::vector<std::string> all_strings(const std::string& mine) const;
  // Ends every rank at once with this exit status (an error on one rank
  // must not leave the others waiting in a collective).
  [[noreturn]] void abort(int status) const;

 private:
  int rank_ = 0, size_ = 1;
  bool started_ = false;
};

}  // namespace zibert
