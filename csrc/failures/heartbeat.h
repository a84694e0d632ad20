// The heartbeat monitor: one process-wide thread that ends the process when
// a group's watchdog stops beating (stuck in a CUDA or NCCL call, or a lock),
// so that torchrun can restart the job instead of it hanging for ever.
// Like backend nccl's TORCH_NCCL_ENABLE_MONITORING /
// TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (Options.heartbeat_timeout, 0 = off).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace nccl_core {

namespace heartbeat {

// Watches `beat` (a watchdog's counter, bumped every sweep) until
// unwatch(beat); `label` names the group in the report.
void watch(const std::atomic<uint64_t>* beat, std::chrono::milliseconds limit,
           const std::string& label);
void unwatch(const std::atomic<uint64_t>* beat);

}  // namespace heartbeat

}  // namespace nccl_core
