#pragma once
// The payload every simulated transfer carries: S4U's put_async refuses a null payload, and nobody reads it, so the
// collectives and the GPU workers' point-to-point messages all pass the address of this one object.

namespace edgc::sim {

/// The address to pass as put_async's payload. One object for the whole library (an inline variable).
inline int g_payload = 0;

}  // namespace edgc::sim
