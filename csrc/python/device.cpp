// Bindings of device communicators (device/dev_comm.h) and of the device-API
// collectives (device/collectives.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <climits>
#include <cstdio>
#include <string>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "device/collectives.h"
#include "device/dev_comm.h"
#include "device/layouts.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "python/bind.h"
#include "python/convert.h"
#include "util/checked.h"
#include "util/concat.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

using Req = DevCommRequirements;

std::string repr(const Req& r) {
  return concat("NCCLDevCommRequirements(lsa_multimem=", r.lsa_multimem ? "True" : "False",
                ", barrier_count=", r.barrier_count, ", lsa_barrier_count=", r.lsa_barrier_count,
                ", rail_gin_barrier_count=", r.rail_gin_barrier_count,
                ", lsa_ll_a2a_block_count=", r.lsa_ll_a2a_block_count,
                ", lsa_ll_a2a_slot_count=", r.lsa_ll_a2a_slot_count,
                ", gin_force_enable=", r.gin_force_enable ? "True" : "False",
                ", gin_context_count=", r.gin_context_count, ", gin_signal_count=",
                r.gin_signal_count, ", gin_counter_count=", r.gin_counter_count,
                ", gin_connection_type=", r.gin_connection_type, ", gin_exclusive_contexts=",
                r.gin_exclusive_contexts ? "True" : "False", ", gin_queue_depth=",
                r.gin_queue_depth, ", gin_traffic_class=",
                r.gin_traffic_class == INT32_MIN ? std::string("None")
                                                 : std::to_string(r.gin_traffic_class),
                ", world_gin_barrier_count=", r.world_gin_barrier_count,
                ", gin_strong_signals_required=", r.gin_strong_signals_required ? "True" : "False",
                ", gin_va_signals_required=", r.gin_va_signals_required ? "True" : "False",
                ", gin_custom_stride=", r.gin_custom_stride, ", gin_type=", r.gin_type,
                ", cft_caps=", r.cft_caps, ", cft_barrier_count=", r.cft_barrier_count, ")");
}

// None (NCCL's traffic class) or an int.
int traffic_class(py::handle v) {
  if (v.is_none()) {
    return INT32_MIN;
  }
  int t = checked::narrow<int>(as_int(v, "gin_traffic_class"), "gin_traffic_class");
  NCCL_CORE_REQUIRE(t != INT32_MIN, "NCCLDevCommRequirements.gin_traffic_class ", t,
                    " is NCCL's 'unset'; pass None for NCCL's traffic class");
  return t;
}

py::object constant(const char* type, int value) {
  return py::module_::import("nccl_core_backend.constants").attr(type)(value);
}

// An NcclGinConnectionType, range-checked as a 64-bit int before it is
// narrowed (2**32 must not become 0).
int connection_type(py::handle v) {
  long long t = as_int(v, "gin_connection_type");
  NCCL_CORE_REQUIRE(t >= 0 && t <= 3,
                    "NCCLDevCommRequirements.gin_connection_type must be an "
                    "NcclGinConnectionType (0 to 3), got ",
                    t);
  return static_cast<int>(t);
}

py::object resource_class(const char* name) {
  return py::module_::import("nccl_core_backend.dev_resources").attr(name);
}

int field(py::handle item, const char* name) {
  return checked::narrow<int>(as_int(item.attr(name), name), name);
}

Team team_from(py::handle team, const char* where) {
  py::object team_type = py::module_::import("nccl_core_backend.team").attr("NCCLTeam");
  NCCL_CORE_REQUIRE(py::isinstance(team, team_type), where, " must be an NCCLTeam, got ",
                    std::string(py::str(team.get_type().attr("__name__"))));
  return Team{field(team, "n_ranks"), field(team, "rank"), field(team, "stride")};
}

// NCCLDevCommRequirements.resources: a tuple of LsaBarrierRequirement,
// GinBarrierRequirement and LLA2ARequirement (nccl_core_backend.dev_resources).
std::vector<ResourceRequest> resource_requests(py::handle resources) {
  NCCL_CORE_REQUIRE(py::isinstance<py::tuple>(resources) || py::isinstance<py::list>(resources),
                    "NCCLDevCommRequirements.resources must be a tuple, got ",
                    std::string(py::str(resources.get_type().attr("__name__"))));
  py::object lsa = resource_class("LsaBarrierRequirement");
  py::object gin = resource_class("GinBarrierRequirement");
  py::object a2a = resource_class("LLA2ARequirement");
  std::vector<ResourceRequest> out;
  for (py::handle item : resources) {
    ResourceRequest r;
    if (py::isinstance(item, lsa) || py::isinstance(item, gin)) {
      r.kind = py::isinstance(item, lsa) ? ResourceRequest::Kind::LsaBarrier
                                         : ResourceRequest::Kind::GinBarrier;
      r.team = team_from(item.attr("team"),
                         "NCCLDevCommRequirements.resources: a barrier's team");
      r.n_barriers = field(item, "n_barriers");
    } else if (py::isinstance(item, a2a)) {
      r.kind = ResourceRequest::Kind::LLA2A;
      r.n_blocks = field(item, "n_blocks");
      r.max_elements = field(item, "max_elements");
      r.max_element_size = field(item, "max_element_size");
    } else {
      NCCL_CORE_REQUIRE(false,
                        "NCCLDevCommRequirements.resources holds LsaBarrierRequirement, "
                        "GinBarrierRequirement or LLA2ARequirement, got ",
                        std::string(py::str(item.get_type().attr("__name__"))));
    }
    out.push_back(r);
  }
  return out;
}

// NCCLDevCommRequirements.teams: a tuple of TeamRequirement.
std::vector<TeamRequest> team_requests(py::handle teams) {
  NCCL_CORE_REQUIRE(py::isinstance<py::tuple>(teams) || py::isinstance<py::list>(teams),
                    "NCCLDevCommRequirements.teams must be a tuple, got ",
                    std::string(py::str(teams.get_type().attr("__name__"))));
  py::object type = resource_class("TeamRequirement");
  std::vector<TeamRequest> out;
  for (py::handle item : teams) {
    NCCL_CORE_REQUIRE(py::isinstance(item, type),
                      "NCCLDevCommRequirements.teams holds TeamRequirement entries, got ",
                      std::string(py::str(item.get_type().attr("__name__"))));
    py::object multimem = item.attr("multimem");
    NCCL_CORE_REQUIRE(PyBool_Check(multimem.ptr()),
                      "TeamRequirement.multimem must be a bool, got ",
                      std::string(py::str(multimem.get_type().attr("__name__"))));
    out.push_back(TeamRequest{team_from(item.attr("team"), "TeamRequirement.team"),
                              multimem.cast<bool>()});
  }
  return out;
}

py::tuple teams_of(const Req& req) {
  py::object team_type = py::module_::import("nccl_core_backend.team").attr("NCCLTeam");
  py::tuple out(req.teams.size());
  for (size_t i = 0; i < req.teams.size(); ++i) {
    const Team& t = req.teams[i].team;
    out[i] = resource_class("TeamRequirement")(team_type(t.nranks, t.rank, t.stride),
                                               req.teams[i].multimem);
  }
  return out;
}

py::tuple resources_of(const Req& req) {
  py::object team_type = py::module_::import("nccl_core_backend.team").attr("NCCLTeam");
  py::tuple out(req.resources.size());
  for (size_t i = 0; i < req.resources.size(); ++i) {
    const ResourceRequest& r = req.resources[i];
    py::object team = team_type(r.team.nranks, r.team.rank, r.team.stride);
    switch (r.kind) {
      case ResourceRequest::Kind::LsaBarrier:
        out[i] = resource_class("LsaBarrierRequirement")(team, r.n_barriers);
        break;
      case ResourceRequest::Kind::GinBarrier:
        out[i] = resource_class("GinBarrierRequirement")(team, r.n_barriers);
        break;
      case ResourceRequest::Kind::LLA2A:
        out[i] = resource_class("LLA2ARequirement")(r.n_blocks, r.max_elements,
                                                    r.max_element_size);
        break;
    }
  }
  return out;
}

// DevCommResource.resource_handles: each resource's handle as NCCL completed it.
py::tuple handles_of(const DevComm& dc) {
  const auto& wanted = dc.requirements().resources;
  const auto& got = dc.resource_handles();
  py::tuple out(got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const layout::ResourceHandle& h = got[i];
    switch (wanted[i].kind) {
      case ResourceRequest::Kind::LsaBarrier:
        out[i] = resource_class("LsaBarrierHandle")(h.first, static_cast<int>(h.second));
        break;
      case ResourceRequest::Kind::GinBarrier:
        out[i] = resource_class("GinBarrierHandle")(h.first, h.second);
        break;
      case ResourceRequest::Kind::LLA2A:
        out[i] = resource_class("LLA2AHandle")(h.first, h.second);
        break;
    }
  }
  return out;
}

// Sets one list field of `r` only if the whole requirements stay valid: a
// refused assignment leaves `r` as it was.
template <class T>
void set_checked(Req& r, std::vector<T> Req::*field, std::vector<T> value) {
  Req next = r;
  next.*field = std::move(value);
  next.validate();
  r.*field = std::move(next.*field);
}

void check_out(const Buffer& out, const DevComm& dc) {
  auto comm = dc.owner();
  NCCL_CORE_REQUIRE(comm != nullptr, "the device communicator's communicator is gone");
  NCCL_CORE_REQUIRE(out.device == comm->device(), "out is on device ", out.device,
                    ", but the communicator is on device ", comm->device());
}

} // namespace

void bind_device(py::module_& m) {
  py::class_<Req>(m, "NCCLDevCommRequirements",
                  "What a device communicator must provide (ncclDevCommRequirements).")
      .def(py::init([](bool lsa_multimem, int barrier_count, int lsa_barrier_count,
                       int rail_gin_barrier_count, int lsa_ll_a2a_block_count,
                       int lsa_ll_a2a_slot_count, bool gin_force_enable, int gin_context_count,
                       int gin_signal_count, int gin_counter_count, py::handle gin_connection_type,
                       bool gin_exclusive_contexts, int gin_queue_depth,
                       py::handle gin_traffic_class, int world_gin_barrier_count,
                       bool gin_strong_signals_required, bool gin_va_signals_required,
                       int gin_custom_stride, int gin_type, int cft_caps, int cft_barrier_count,
                       py::handle resources, py::handle teams) {
             Req r;
             r.lsa_multimem = lsa_multimem;
             r.barrier_count = barrier_count;
             r.lsa_barrier_count = lsa_barrier_count;
             r.rail_gin_barrier_count = rail_gin_barrier_count;
             r.lsa_ll_a2a_block_count = lsa_ll_a2a_block_count;
             r.lsa_ll_a2a_slot_count = lsa_ll_a2a_slot_count;
             r.gin_force_enable = gin_force_enable;
             r.gin_context_count = gin_context_count;
             r.gin_signal_count = gin_signal_count;
             r.gin_counter_count = gin_counter_count;
             r.gin_connection_type = connection_type(gin_connection_type);
             r.gin_exclusive_contexts = gin_exclusive_contexts;
             r.gin_queue_depth = gin_queue_depth;
             r.gin_traffic_class = traffic_class(gin_traffic_class);
             r.world_gin_barrier_count = world_gin_barrier_count;
             r.gin_strong_signals_required = gin_strong_signals_required;
             r.gin_va_signals_required = gin_va_signals_required;
             r.gin_custom_stride = gin_custom_stride;
             r.gin_type = gin_type;
             r.cft_caps = cft_caps;
             r.cft_barrier_count = cft_barrier_count;
             r.resources = resource_requests(resources);
             r.teams = team_requests(teams);
             r.validate();
             return r;
           }),
           py::kw_only(), py::arg("lsa_multimem") = false, py::arg("barrier_count") = 0,
           py::arg("lsa_barrier_count") = 0, py::arg("rail_gin_barrier_count") = 0,
           py::arg("lsa_ll_a2a_block_count") = 0, py::arg("lsa_ll_a2a_slot_count") = 0,
           py::arg("gin_force_enable") = false, py::arg("gin_context_count") = 0,
           py::arg("gin_signal_count") = 0, py::arg("gin_counter_count") = 0,
           py::arg("gin_connection_type") = 0, py::arg("gin_exclusive_contexts") = false,
           py::arg("gin_queue_depth") = 0, py::arg("gin_traffic_class") = py::none(),
           py::arg("world_gin_barrier_count") = 0, py::arg("gin_strong_signals_required") = true,
           py::arg("gin_va_signals_required") = true, py::arg("gin_custom_stride") = 1,
           py::arg("gin_type") = 0, py::arg("cft_caps") = 0, py::arg("cft_barrier_count") = 0,
           py::arg("resources") = py::tuple(), py::arg("teams") = py::tuple())
      .def_readwrite("lsa_multimem", &Req::lsa_multimem)
      .def_readwrite("barrier_count", &Req::barrier_count)
      .def_readwrite("lsa_barrier_count", &Req::lsa_barrier_count)
      .def_readwrite("rail_gin_barrier_count", &Req::rail_gin_barrier_count)
      .def_readwrite("lsa_ll_a2a_block_count", &Req::lsa_ll_a2a_block_count)
      .def_readwrite("lsa_ll_a2a_slot_count", &Req::lsa_ll_a2a_slot_count)
      .def_readwrite("gin_force_enable", &Req::gin_force_enable)
      .def_readwrite("gin_context_count", &Req::gin_context_count)
      .def_readwrite("gin_signal_count", &Req::gin_signal_count)
      .def_readwrite("gin_counter_count", &Req::gin_counter_count)
      .def_property(
          "gin_connection_type",
          [](const Req& r) {
            return py::module_::import("nccl_core_backend.constants")
                .attr("NcclGinConnectionType")(r.gin_connection_type);
          },
          [](Req& r, py::handle v) {
            r.gin_connection_type = connection_type(v);
          })
      .def_readwrite("gin_exclusive_contexts", &Req::gin_exclusive_contexts)
      .def_readwrite("gin_queue_depth", &Req::gin_queue_depth)
      .def_property(
          "gin_traffic_class",
          [](const Req& r) -> py::object {
            if (r.gin_traffic_class == INT32_MIN) {
              return py::none();
            }
            return py::int_(r.gin_traffic_class);
          },
          [](Req& r, py::handle v) { r.gin_traffic_class = traffic_class(v); })
      .def_readwrite("world_gin_barrier_count", &Req::world_gin_barrier_count)
      .def_readwrite("gin_strong_signals_required", &Req::gin_strong_signals_required)
      .def_readwrite("gin_va_signals_required", &Req::gin_va_signals_required)
      .def_readwrite("gin_custom_stride", &Req::gin_custom_stride)
      .def_property(
          "gin_type", [](const Req& r) { return constant("NcclGinType", r.gin_type); },
          [](Req& r, int v) { r.gin_type = v; })
      .def_property(
          "cft_caps", [](const Req& r) { return constant("NcclCftCap", r.cft_caps); },
          [](Req& r, int v) { r.cft_caps = v; })
      .def_readwrite("cft_barrier_count", &Req::cft_barrier_count)
      .def_property(
          "resources", &resources_of,
          [](Req& r, py::handle v) { set_checked(r, &Req::resources, resource_requests(v)); },
          "LsaBarrierRequirement, GinBarrierRequirement and LLA2ARequirement entries, in "
          "order; each gives one handle in DevCommResource.resource_handles.")
      .def_property(
          "teams", &teams_of,
          [](Req& r, py::handle v) { set_checked(r, &Req::teams, team_requests(v)); },
          "TeamRequirement entries: the teams NCCL prepares, once each, with a multimem "
          "handle where any entry for the team sets multimem.")
      .def("__repr__", &repr);

  py::class_<DevComm, Resource, std::shared_ptr<DevComm>>(
      m, "DevCommResource", "A device communicator (ncclDevComm); close() destroys it.")
      .def_property_readonly(
          "ptr", [](const DevComm& d) { return reinterpret_cast<uintptr_t>(d.ptr()); },
          "Host address of the ncclDevComm struct (pass it by value to your kernels).")
      .def_property_readonly("dev_comm", [](py::object self) { return self; },
                             "This resource (nccl.core spelling: resource.dev_comm.ptr).")
      .def_property_readonly("requirements", &DevComm::requirements)
      .def(
          "multimem_handle",
          [](const DevComm& d, py::handle team) {
            Team t = team_from(team, "multimem_handle: team");
            std::optional<void*> base = d.multimem_handle(t);
            if (!base) {
              throw py::key_error(concat(
                  "no multimem handle for NCCLTeam(n_ranks=", t.nranks, ", rank=", t.rank,
                  ", stride=", t.stride,
                  "); it was not requested with multimem=True in this device communicator's "
                  "requirements"));
            }
            return resource_class("MultimemHandle")(reinterpret_cast<uintptr_t>(*base));
          },
          py::arg("team"), "The MultimemHandle NCCL filled in for `team` (a TeamRequirement "
          "with multimem=True); KeyError for any other team.")
      .def_property_readonly("resource_handles", &handles_of,
                             "The handle of each of requirements.resources, in order "
                             "(LsaBarrierHandle, GinBarrierHandle, LLA2AHandle).")
      .def("__repr__", [](const DevComm& d) {
        if (!d.is_valid()) {
          return std::string("<DevCommResource (closed)>");
        }
        char buf[64];
        std::snprintf(buf, sizeof(buf), "<DevCommResource ptr=%p>", d.ptr());
        return std::string(buf);
      });

  auto cls = py::reinterpret_borrow<py::class_<Communicator, std::shared_ptr<Communicator>>>(
      m.attr("Communicator"));
  cls.def(
         "create_dev_comm",
         [](const std::shared_ptr<Communicator>& c, std::optional<Req> req) {
           Req r = req.value_or(Req{});
           Communicator::Use use(*c);
           py::gil_scoped_release release;
           return DevComm::create(c, r);
         },
         py::arg("requirements") = py::none(),
         "Creates a device communicator (collective); tracked and released with this "
         "communicator.");

  m.def(
      "_device_all_reduce",
      [](const DevComm& dc, const Window& win, py::handle out, long long offset, int op,
         py::handle stream) {
        auto o = as_buffer(out, "out");
        check_out(o, dc);
        Communicator::Use use(*dc.owner());
        // Elements of out's dtype; in bytes it must not wrap.
        size_t at = checked::offset_bytes(offset, types::element_size(o.type), "offset");
        auto st = as_stream(stream, o.device);
        py::gil_scoped_release release;
        device::all_reduce(dc, win, at, nullptr, o.ptr, o.count, o.type, op, st);
      },
      py::arg("dev_comm"), py::arg("window"), py::arg("out"), py::arg("offset"), py::arg("op"),
      py::arg("stream"));
  m.def(
      "_device_all_gather",
      [](const DevComm& dc, const Window& win, py::handle out, long long offset,
         py::handle stream) {
        auto o = as_buffer(out, "out");
        check_out(o, dc);
        Communicator::Use use(*dc.owner());
        size_t elem = types::element_size(o.type);
        size_t at = checked::offset_bytes(offset, elem, "offset");
        size_t n = static_cast<size_t>(dc.owner()->nranks());
        NCCL_CORE_REQUIRE(o.count % n == 0, "out has ", o.count,
                          " elements, not a multiple of the ", n, " ranks");
        size_t block = checked::bytes(o.count / n, elem, "out block bytes");
        auto st = as_stream(stream, o.device);
        py::gil_scoped_release release;
        device::all_gather(dc, win, at, o.ptr, block, st);
      },
      py::arg("dev_comm"), py::arg("window"), py::arg("out"), py::arg("offset"),
      py::arg("stream"));
  m.def("_claimed_struct_version", &layout::claimed_version, py::arg("loaded"),
        "The release whose ncclDevCommRequirements / ncclCommProperties layout nccl_core "
        "claims for NCCL version code `loaded` (0: unversioned).");
  m.def("_device_kernels_available", &device_kernels_match_loaded_nccl);
  m.def("_device_kernels_mismatch", &device_kernels_mismatch_message);
}

} // namespace nccl_core::python
