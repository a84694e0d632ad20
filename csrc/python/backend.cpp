// Bindings of the c10d backend and its Options.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>
#include <cstring>

#include "backend/backend.h"
#include "failures/group_failures.h"
#include "tooling/comm_listener.h"
#include "comm/communicator.h"
#include "python/bind.h"
#include "python/coll_config.h"
#include "python/paths.h"
#include "util/torch_errors.h"

namespace py = pybind11;
using nccl_core::Backend;
using nccl_core::GroupOptions;

namespace {
// Whether Python may still be called (not during interpreter exit).
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

template <class T>
c10::intrusive_ptr<T> copy_of(const T& o) {
  return c10::make_intrusive<T>(o);
}
} // namespace

namespace nccl_core::python {

namespace {

// A per-call config taken back from a group by _swap_coll_config, to be
// given back when a coll_config(...) block ends.
struct CollConfigHandle {
  std::shared_ptr<const collectives::CollConfig> config;
};

}  // namespace

void bind_backend(py::module_& m) {
  py::class_<CollConfigHandle>(m, "_CollConfigHandle",
                               "A group's per-call config, as _swap_coll_config returns it.");
  py::class_<GroupOptions, c10d::Backend::Options, c10::intrusive_ptr<GroupOptions>>(
      m, "Options", "Options of a nccl_core process group (pg_options=).")
      .def(py::init<std::chrono::milliseconds>(),
           py::arg("timeout") = kBackendDefaultTimeout)
      .def_readwrite("is_high_priority_stream", &GroupOptions::is_high_priority_stream)
      .def_readwrite("blocking_wait", &GroupOptions::blocking_wait)
      .def_readwrite("watchdog_interval", &GroupOptions::watchdog_interval)
      .def_readwrite("trace_buffer_size", &GroupOptions::trace_buffer_size,
                     "Operations each rank keeps for the desync report on a timeout "
                     "(default 256; 0 = none)")
      .def_readwrite("desync_report_wait", &GroupOptions::desync_report_wait,
                     "How long a timed-out rank waits for the other ranks' state (default 2.5 s)")
      .def_readwrite("call_check_interval", &GroupOptions::call_check_interval,
                     "How often each rank compares its collectives (op, dtype, sizes) with its "
                     "ring neighbour's through the store; a difference is a desync error "
                     "(default 1 s; 0 = never)")
      .def_readwrite("unraised_error_grace", &GroupOptions::unraised_error_grace,
                     "error_handling 0 and 2: an error that no call, Work.wait() or "
                     "destroy_process_group() raised within this long ends the process, since "
                     "a thread waiting on the GPU behind the failed collective cannot see it "
                     "(default 2 s; 0 = never)")
      .def_readwrite("heartbeat_timeout", &GroupOptions::heartbeat_timeout,
                     "A watchdog that makes no progress for this long ends the process "
                     "(default 480 s; 0 = off)")
      .def_property(
          "error_handling", [](const GroupOptions& o) { return o.error_handling; },
          [](GroupOptions& o, int v) {
            if (v < 0 || v > 3) {
              throw py::value_error("error_handling must be 0-3 (TORCH_NCCL_ASYNC_ERROR_HANDLING), got " +
                                    std::to_string(v));
            }
            o.error_handling = v;
          },
          "On a timeout or NCCL error, as TORCH_NCCL_ASYNC_ERROR_HANDLING: 0 fail the work and "
          "keep the communicator (for dist.shrink_group(..., SHRINK_ABORT)), 1 abort the "
          "communicator and end the process, 2 abort the communicator and raise, 3 end the "
          "process (default)")
      .def_property(
          "abort_on_error",
          [](const GroupOptions& o) { return ErrorPolicy{o.error_handling}.aborts(); },
          [](GroupOptions& o, bool v) {
            o.error_handling = v ? ErrorPolicy::kCleanUpOnly : ErrorPolicy::kNone;
          },
          "Older spelling of error_handling: True is 2 (abort, raise), False is 0 (keep)")
      .def_readwrite("fast_path_max_bytes", &GroupOptions::fast_path_max_bytes,
                     "all_reduce, reduce_scatter_tensor, all_gather_into_tensor, broadcast "
                     "and all_to_all_single calls whose input is at most this many bytes run "
                     "as one nccl_core kernel over NVLink; 0 = off.  None (default): the path "
                     "table decides per world size and operation (nccl_core_backend.paths)")
      .def_readwrite("eager_fast_path_max_bytes", &GroupOptions::eager_fast_path_max_bytes,
                     "Like fast_path_max_bytes, for eager calls alone, where "
                     "fast_path_max_bytes is None (the table sends small eager calls to NCCL: "
                     "an eager call of ours costs more host time than NCCL's); for "
                     "programs bound by one call's latency.  None (default): the table's")
      .def_readwrite("push_min_bytes", &GroupOptions::push_min_bytes,
                     "Smallest all_reduce that runs as nccl_core's push kernel over NVLink "
                     "(the fast path takes calls up to its limit first).  None (default): "
                     "the path table's")
      .def_readwrite("push_max_bytes", &GroupOptions::push_max_bytes,
                     "Largest all_reduce that runs as nccl_core's push kernel, whatever memory "
                     "its tensor lies in; 0 = off.  None (default): the path table's, per world "
                     "size (nccl_core_backend.paths).  Its staging costs up to 2 (nranks - 1) / "
                     "nranks of this per rank")
      .def_property(
          "push_ctas", [](const GroupOptions& o) { return o.push_ctas; },
          [](GroupOptions& o, int v) {
            if (v < 1 || v > nvlink::kPushMaxBlocks) {
              throw py::value_error("push_ctas must be in 1.." +
                                    std::to_string(nvlink::kPushMaxBlocks) + ", got " +
                                    std::to_string(v));
            }
            o.push_ctas = v;
          },
          "Blocks (SMs) a push all_reduce runs on, at most (1..128, default 32)")
      .def_readwrite("two_shot_min_bytes", &GroupOptions::two_shot_min_bytes,
                     "Fast-path all_reduce calls of at least this many bytes take two shots: "
                     "each rank reduces one chunk and stores it into its peers' copies, then "
                     "copies the other chunks out of its own; 0 = never.  None (default): the "
                     "path table's, per world size (nccl_core_backend.paths)")
      .def_readwrite("one_way_max_bytes", &GroupOptions::one_way_max_bytes,
                     "Fast-path all_reduce, reduce_scatter_tensor, all_gather_into_tensor and "
                     "broadcast calls that send each peer at most this many bytes take the "
                     "one-way kernels: every rank stores its data, flagged, straight into its "
                     "peers' windows, with no barrier; 0 = never.  None (default): the path "
                     "table's, per world size (nccl_core_backend.paths)")
      .def_readwrite("register_allocator_segments", &GroupOptions::register_allocator_segments,
                     "Register every caching-allocator segment on the group's device with its "
                     "communicator (ncclCommRegister), existing ones at creation and new ones "
                     "as they are allocated, deregistered before they are freed: torch's "
                     "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK (default False)")
      .def_property(
          "blocking", [](const GroupOptions& o) { return o.config.blocking; },
          [](GroupOptions& o, bool v) { o.config.blocking = v; },
          "Blocking NCCL communicator (default, fastest host path); False selects NCCL's "
          "non-blocking mode (every group end on a new thread; init aborted on timeout)")
      .def_property(
          "cga_cluster_size", [](const GroupOptions& o) { return o.config.cga_cluster_size; },
          [](GroupOptions& o, int v) { o.config.cga_cluster_size = v; })
      .def_property(
          "min_ctas", [](const GroupOptions& o) { return o.config.min_ctas; },
          [](GroupOptions& o, int v) { o.config.min_ctas = v; })
      .def_property(
          "max_ctas", [](const GroupOptions& o) { return o.config.max_ctas; },
          [](GroupOptions& o, int v) { o.config.max_ctas = v; })
      .def_property(
          "split_share", [](const GroupOptions& o) { return o.config.split_share; },
          [](GroupOptions& o, int v) { o.config.split_share = v; })
      .def_property(
          "cta_policy", [](const GroupOptions& o) { return o.config.cta_policy; },
          [](GroupOptions& o, int v) { o.config.cta_policy = v; })
      .def_property(
          "traffic_class", [](const GroupOptions& o) { return o.config.traffic_class; },
          [](GroupOptions& o, int v) { o.config.traffic_class = v; })
      .def_property(
          "net_name", [](const GroupOptions& o) { return o.config.net_name; },
          [](GroupOptions& o, const std::string& v) { o.config.net_name = v; })
      .def_property(
          "comm_name", [](const GroupOptions& o) { return o.config.comm_name; },
          [](GroupOptions& o, const std::string& v) { o.config.comm_name = v; })
      .def_readwrite("enable_timing", &GroupOptions::enable_timing,
                     "Time every op on the GPU for work._get_duration() and completion "
                     "hooks (TORCH_NCCL_ENABLE_TIMING; default False)")
      .def_readwrite("nan_check", &GroupOptions::nan_check,
                     "Scan what every op sends for NaN on the GPU; one found is raised as "
                     "a DistBackendError naming the op and element by the group's next "
                     "call, Work.wait() or the watchdog (TORCH_NCCL_NAN_CHECK; default "
                     "False; one kernel per op, no host wait)")
      .def_readwrite("nan_check_strict", &GroupOptions::nan_check_strict,
                     "With the NaN check: wait for the scan and refuse an op sending NaN "
                     "with a ValueError before anything is sent; the group stays usable "
                     "(NCCL_CORE_NAN_CHECK=strict; default False; one host wait per op)")
      .def("__copy__", [](const GroupOptions& o) { return copy_of(o); })
      .def("__deepcopy__", [](const GroupOptions& o, py::dict) { return copy_of(o); });

  py::class_<Backend, c10d::Backend, c10::intrusive_ptr<Backend>>(
      m, "ProcessGroupNcclCore", "The nccl_core c10d backend.")
      .def(py::init<c10::intrusive_ptr<c10d::Store>, int, int,
                    c10::intrusive_ptr<GroupOptions>>(),
           py::arg("store"), py::arg("rank"), py::arg("size"),
           py::arg("options"), py::call_guard<py::gil_scoped_release>())
      .def("perform_nocolor_split", &Backend::perform_nocolor_split,
           py::arg("device"), py::call_guard<py::gil_scoped_release>())
      .def("_set_split_source", &Backend::set_split_source, py::arg("parent"),
           py::arg("color"))
      .def(
          "_set_grow_source",
          [](Backend& b, std::shared_ptr<Communicator> parent, const py::bytes& id) {
            std::string raw = id;
            GrowSource source{std::move(parent), {}};
            NCCL_CORE_CHECK_VALUE(raw.size() == sizeof(source.id), "nccl_core grow_group: a "
                                  "unique id has ", sizeof(source.id), " bytes, got ", raw.size());
            std::memcpy(&source.id, raw.data(), raw.size());
            b.set_grow_source(std::move(source));
          },
          py::arg("parent"), py::arg("unique_id"),
          "nc.grow_group's: the group's communicator grows from `parent` (None on a new rank).")
      .def("communicator",
           [](Backend& b, std::optional<int> device) {
             std::optional<at::Device> d;
             if (device) {
               d = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(*device));
             }
             return b.communicator(d);
           },
           py::arg("device") = py::none(), py::call_guard<py::gil_scoped_release>(),
           "The group's Communicator, created on first use (collective then).")
      .def("register_mem_pool", &Backend::register_mem_pool, py::arg("pool"),
           py::arg("symm") = false, py::call_guard<py::gil_scoped_release>(),
           "Registers every segment of `pool` (a torch.cuda.MemPool on the group's device) "
           "with the group's communicator, now and as the pool grows, as ncclCommRegister "
           "buffers.  With symm=True (the pool must use this backend's mem_allocator) the "
           "segments held now become NCCL_WIN_COLL_SYMMETRIC windows, collectively, after "
           "a check that every rank holds as many; later ones are buffers.  Needs the "
           "communicator (device_id= in init_process_group, or a first collective).")
      .def("deregister_mem_pool", &Backend::deregister_mem_pool, py::arg("pool"),
           py::call_guard<py::gil_scoped_release>(),
           "Deregisters the segments of a MemPool registered with register_mem_pool.")
      .def(
          "_registered_segments",
          [](const Backend& b, at::cuda::MemPool* pool) {
            auto [segments, bytes, windows] = b.registered_segments(pool);
            py::dict out;
            out["segments"] = segments;
            out["bytes"] = bytes;
            out["windows"] = windows;
            return out;
          },
          py::arg("pool") = nullptr,
          "Tests: {'segments', 'bytes', 'windows'} registered with the communicator now "
          "(of `pool` only, if given).")
      .def(
          "_swap_coll_config",
          [](Backend& b, py::handle config) -> py::object {
            std::shared_ptr<const collectives::CollConfig> next;
            if (py::isinstance<CollConfigHandle>(config)) {
              next = config.cast<const CollConfigHandle&>().config;
            } else {
              next = as_coll_config(config);
            }
            auto previous = b.next_coll_config.swap(std::move(next));
            if (previous == nullptr) {
              return py::none();
            }
            return py::cast(CollConfigHandle{std::move(previous)});
          },
          py::arg("config"),
          "Gives the group's next collectives `config` (an NCCLCollConfig, None, or what an "
          "earlier call returned); returns the config it replaces (None or a handle).")
      .def("_has_communicator", &Backend::has_communicator)
      .def("_pending_works", &Backend::pending_works)
      .def("_fast_path_calls",
           [](const Backend& b) -> uint64_t { return b.fast_engine() ? b.fast_engine()->calls() : 0; })
      .def("_push_calls",
           [](const Backend& b) -> uint64_t {
             return b.fast_engine() ? b.fast_engine()->push_calls() : 0;
           })
      .def("_paths",
           [](const Backend& b) -> py::object {
             const nvlink::Engine* e = b.fast_engine();
             return e ? py::object(paths_dict(e->paths())) : py::object(py::none());
           },
           "Which calls this group runs as nccl_core's NVLink kernels (nvlink/path_table.h); "
           "None before its communicator exists or with every path off")
      .def("_recorded_ops", [](Backend& b) { return b.failures().recorded_ops(); },
           "The flight recorder's entries, oldest first: 'seq N OP DTYPE IN>OUT done|pending'.")
      .def("_error_message", [](Backend& b) { return b.failures().error_message(); },
           "The error this group failed with (a timeout, an NCCL error, a desync, a NaN "
           "found by the NaN check), '' while it has not; the watchdog may have found it "
           "before any call raised it.")
      .def("_stall_watchdog",
           [](Backend& b, std::chrono::milliseconds pause) { b.failures().stall_watchdog(pause); },
           py::arg("pause"),
           "Tests: the watchdog sleeps `pause` before its next sweep (a stuck watchdog).")
      .def("_add_ephemeral_timeout",
           [](Backend& b, std::chrono::milliseconds t) { b.failures().ephemeral().add(t); },
           py::arg("timeout"),
           "Adds `timeout` to the timeout of ops issued from now until the first of them "
           "completes (as backend nccl's).")
      .def("_ephemeral_timeout", [](Backend& b) { return b.failures().ephemeral().current(); },
           "The ephemeral extension in force now (tests).")
      .def("_set_default_timeout", &Backend::setTimeout, py::arg("timeout"),
           "The timeout of later ops that name none.")
      .def("_start_time_estimate", &Backend::startTimeEstimate,
           py::call_guard<py::gil_scoped_release>(),
           "Ops until _end_time_estimate() are simulated by NCCL, not run.")
      .def("_end_time_estimate", &Backend::endTimeEstimate,
           py::call_guard<py::gil_scoped_release>(),
           "NCCL's estimate of the simulated ops, in microseconds.")
      .def("comm_split_count",
           [](Backend& b) { return b.has_communicator() ? b.communicator()->split_count() : 0; },
           "ncclCommSplit calls made on the group's communicator.")
      .def("memory_stats", [](Backend& b) { return b.live_comm("memory_stats").mem_stats(); },
           "NCCL's memory statistics of the communicator (ncclCommMemStats, NCCL >= 2.29.7).")
      .def("revoke", &Backend::revoke, py::call_guard<py::gil_scoped_release>(),
           "ncclCommRevoke (NCCL >= 2.28.7): ends the group's in-flight work; its pending "
           "Works and every later call raise DistBackendError until "
           "destroy_process_group().")
      .def("suspend",
           [](Backend& b) { b.live_comm("suspend").suspend(nccl_core::newer::kSuspendMem); },
           py::call_guard<py::gil_scoped_release>(),
           "Releases the communicator's suspendable device memory until resume() "
           "(ncclCommSuspend, NCCL >= 2.29.7).")
      .def("resume", [](Backend& b) { b.live_comm("resume").resume(); },
           py::call_guard<py::gil_scoped_release>(),
           "Restores what suspend() released (ncclCommResume, NCCL >= 2.29.7).")
      .def("_is_initialized", &Backend::has_communicator,
           "Whether the group's communicator exists.")
      .def_property_readonly("nccl_core_options", &Backend::options)
      .def_property_readonly("options", &Backend::options,
                             "The group's Options (torch 2.11 has no base binding).")
      .def("_stream", [](Backend& b) {
        auto s = b.stream();
        return py::make_tuple(s.id(), s.device_index(),
                              static_cast<int>(s.device_type()));
      }, "(stream_id, device_index, device_type) of the backend's stream.");
  m.def(
      "_set_comm_listener",
      [](py::object fn) {
        if (fn.is_none()) {
          comm_listener::install(nullptr);
          return;
        }
        // Never freed: a notice may come while the interpreter exits.
        auto* held = new py::object(std::move(fn));
        comm_listener::install([held](const comm_listener::Notice& n) {
          if (!python_alive()) {
            return;  // interpreter exiting: nothing left to tell
          }
          py::gil_scoped_acquire gil;
          try {
            (*held)(n.group, n.comm, n.device, n.up);
          } catch (py::error_already_set& e) {
            e.discard_as_unraisable("nccl_core communicator listener");
          }
        });
      },
      py::arg("listener"),
      "Installs listener(group_name, comm_ptr, device, up), called when a group's "
      "communicator is created (up) and before it is finalized or aborted; None removes it.");
}

} // namespace nccl_core::python
