#pragma once
// MPI for distributed sweeps, only when the process was started by mpirun/mpiexec: a plain `edgc sweep` never
// initialises MPI (and needs no MPI runtime). Messages are tagged byte strings between ranks.
#include <memory>
#include <optional>
#include <string>

namespace edgc::engine {

class MpiSession {
 public:
  struct Message {
    int from = 0;
    int tag = 0;
    std::string payload;
  };

  /// A session when the environment says an MPI launcher started this process (Open MPI's OMPI_COMM_WORLD_SIZE,
  /// PMIx's PMIX_RANK, or PMI_SIZE) and MPI_COMM_WORLD has more than one rank; nullptr otherwise. Throws
  /// UsageError when launched by mpirun but this build has no MPI.
  static std::unique_ptr<MpiSession> open_if_launched();

  virtual ~MpiSession() = default;  ///< finalizes MPI
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Sends (blocking until the buffer may be reused).
  virtual void send(int to, int tag, const std::string& payload) = 0;
  /// A message that has arrived, if any (never blocks).
  virtual std::optional<Message> poll() = 0;
  /// Ends the job on every rank (MPI_Abort) after a fatal error on this one.
  virtual void abort(int code) = 0;
};

}  // namespace edgc::engine
