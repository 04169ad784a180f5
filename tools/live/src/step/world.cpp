#include "world.hpp"

#include <algorithm>
#include <cstddef>

#include "edgc/core/error.hpp"
#include "edgc/kernels/mpi_communicator.hpp"

namespace edgc::live {

using kernels::check_mpi;

int auto_pp(int world, int trace_stages) {
  int best = 1;
  for (int p = 1; p <= std::min(world, trace_stages); ++p)
    if (world % p == 0 && world / p >= 2) best = p;
  return world == 1 ? 1 : best;
}

World World::of_comm_world() {
  World w;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  return w;
}

void World::split(int pp_stages, int trace_stages, const std::string& scenario_path) {
  pp = pp_stages;
  if (size % pp != 0)
    throw ConfigError(scenario_path, "live.pp",
                      std::to_string(pp) + " does not divide the " + std::to_string(size) + " ranks");
  if (pp > trace_stages)
    throw ConfigError(scenario_path, "live.pp",
                      std::to_string(pp) + " exceeds the trace's " + std::to_string(trace_stages) + " pipeline stages");
  dp = size / pp;
  stage = rank / dp;
  replica = rank % dp;
  check_mpi(MPI_Comm_split(MPI_COMM_WORLD, stage, replica, &group), "MPI_Comm_split");
}

void World::free_group() { check_mpi(MPI_Comm_free(&group), "MPI_Comm_free"); }

void World::barrier() const { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void World::group_reduce(std::vector<double>& v, MPI_Op op) const {
  if (v.empty()) return;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op, group), "MPI_Allreduce");
}

void World::world_reduce(std::vector<double>& v, MPI_Op op) const {
  if (v.empty()) return;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op, MPI_COMM_WORLD),
            "MPI_Allreduce");
}

std::vector<std::string> World::gather(const std::string& mine) const {
  const auto at = [](int i) { return static_cast<std::size_t>(i); };
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(at(size));
  check_mpi(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> displs(at(size), 0);
  for (int i = 1; i < size; ++i) displs[at(i)] = displs[at(i - 1)] + lens[at(i - 1)];
  std::string all(rank == 0 ? at(displs.back() + lens.back()) : 0, '\0');
  check_mpi(
      MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
      "MPI_Gatherv");
  std::vector<std::string> out;
  if (rank == 0)
    for (int i = 0; i < size; ++i) out.push_back(all.substr(at(displs[at(i)]), at(lens[at(i)])));
  return out;
}

void World::broadcast(std::string& s) const {
  int len = static_cast<int>(s.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  s.resize(static_cast<std::size_t>(len));
  check_mpi(MPI_Bcast(s.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

int World::host_rank() const {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int r = 0;
  check_mpi(MPI_Comm_rank(node, &r), "MPI_Comm_rank");
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
  return r;
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  check_mpi(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  return std::string(name, static_cast<std::size_t>(len));
}

}  // namespace edgc::live
