#include "edgc/engine/mpi_session.hpp"

#include <cstdlib>
#include <string>

#include "edgc/core/error.hpp"

#if EDGC_BUILT_WITH_MPI
#include <mpi.h>

#include "edgc/kernels/mpi_communicator.hpp"
#endif

namespace edgc::engine {
namespace {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

#if EDGC_BUILT_WITH_MPI
void check(int rc, const char* what) { kernels::check_mpi(rc, what); }

class OpenMpiSession final : public MpiSession {
 public:
  // MPI is initialised by the runtime (the same one `edgc live` uses: it refuses SimGrid's SMPI MPI_Init) and
  // finalised when the session ends.
  OpenMpiSession() {
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, int tag, const std::string& payload) override {
    check(MPI_Send(payload.data(), static_cast<int>(payload.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD), "MPI_Send");
  }
  std::optional<Message> poll() override {
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
    if (flag == 0) return std::nullopt;
    int count = 0;
    check(MPI_Get_count(&st, MPI_CHAR, &count), "MPI_Get_count");
    Message m;
    m.from = st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    m.payload.resize(static_cast<std::size_t>(count));
    check(MPI_Recv(m.payload.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    return m;
  }
  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

 private:
  kernels::MpiRuntime runtime_;
  int rank_ = 0;
  int size_ = 1;
};
#endif

}  // namespace

std::unique_ptr<MpiSession> MpiSession::open_if_launched() {
  if (!launched_by_mpi()) return nullptr;
#if EDGC_BUILT_WITH_MPI
  auto s = std::make_unique<OpenMpiSession>();
  if (s->size() < 2) return nullptr;  // one rank: a plain local run (MPI is finalized here)
  return s;
#else
  throw UsageError("mpirun", "this edgc was built without MPI (configure with MPI found to run distributed sweeps)");
#endif
}

}  // namespace edgc::engine
