#include "failure.hpp"

#include <filesystem>
#include <new>
#include <stdexcept>

#include "edgc/core/error.hpp"

namespace edgc::cli {

std::string bug_report_hint(const std::string& command_line) {
  return "edgc: this is a bug in edgc, not a mistake in the input: please report it with the command line (" +
         command_line +
         "), the output of 'edgc version --json', and the files it read (scenario and included cluster/model files, "
         "sweep or plan spec, the trace's trace.json) or, where they cannot be shared, the message above";
}

int report_failure(const std::exception_ptr& failure, const std::string& command_line, std::ostream& err) {
  try {
    std::rethrow_exception(failure);
  } catch (const InputError& e) {
    err << "edgc: error: " << e.what() << "\n";
    return 2;
  } catch (const IoError& e) {  // the operating system refused: the message names the path and its reason
    err << "edgc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // The OS refused a directory operation (disk full, permissions, a read-only mount): its message names the
    // operation, the reason and the path, so it is reported like an IoError, not as a bug.
    err << "edgc: error: " << e.what() << "\n";
    return 1;
  } catch (const CudaError& e) {
    err << "edgc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    err << "edgc: error: out of memory: the run needs more memory than this machine gives it (reduce the sizes "
           "in the input, or the --jobs running at once)\n";
    return 1;
  } catch (const std::exception& e) {  // InternalError, or a library's exception that slipped through
    err << "edgc: internal error: " << e.what() << "\n" << bug_report_hint(command_line) << "\n";
    return 1;
  } catch (...) {
    err << "edgc: internal error: an exception of unknown type\n" << bug_report_hint(command_line) << "\n";
    return 1;
  }
}

}  // namespace edgc::cli
