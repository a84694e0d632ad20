#include "collectives/coll_config.h"

#include <utility>

#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"

namespace nccl_core::collectives {

namespace {

int or_undefined(const std::optional<int>& v) {
  return v ? *v : newer::kConfigUndefInt;
}

}  // namespace

std::shared_ptr<const CollConfig> CollConfig::make(Values values) {
  nccl().require(features::kCollConfig.symbol, "NCCLCollConfig (config=)",
                 features::kCollConfig.native_since);
  if (values.launch_completion_event != nullptr &&
      !features::available(features::kCollConfigEvent)) {
    features::refuse(features::kCollConfigEvent, "NCCLCollConfig.launch_completion_event");
  }
  return std::shared_ptr<const CollConfig>(new CollConfig(std::move(values)));
}

CollConfig::CollConfig(Values values) : values_(std::move(values)) {
  int loaded = api::loaded_version();
  // A release before launchCompletionEvent reads the fields before it: the
  // size says which it gets.
  layout_.size = features::available(features::kCollConfigEvent) ? sizeof(newer::CollConfig)
                                                                 : newer::kCollConfigSize231;
  layout_.magic = newer::kApiMagic;
  layout_.version = static_cast<unsigned int>(loaded);
  layout_.min_ctas = or_undefined(values_.min_ctas);
  layout_.max_ctas = or_undefined(values_.max_ctas);
  layout_.nvls_ctas = or_undefined(values_.nvls_ctas);
  layout_.cga_cluster_size = or_undefined(values_.cga_cluster_size);
  layout_.alg_selection = values_.alg_selection ? values_.alg_selection->c_str() : nullptr;
  layout_.force_alg_selection = values_.force_alg_selection.value_or(true) ? 1 : 0;
  layout_.cta_policy = or_undefined(values_.cta_policy);
  layout_.user_profiler_tag = values_.user_profiler_tag;
  layout_.launch_completion_event = values_.launch_completion_event;
  // The vendor options as NCCL's list; their strings are values_'s, which
  // outlive it (ext_ and values_ are never resized after this).
  ext_.resize(values_.vendor_options.size());
  for (size_t i = 0; i < ext_.size(); ++i) {
    const VendorOption& o = values_.vendor_options[i];
    newer::ConfigExt& e = ext_[i];
    e.next = i + 1 < ext_.size() ? &ext_[i + 1] : nullptr;
    e.vendor_id = o.vendor_id;
    e.option_id = o.option_id;
    switch (o.kind) {
      case VendorOption::Kind::Int:
        e.value.i = o.int_value;
        break;
      case VendorOption::Kind::Str:
        e.value.s = o.str_value.c_str();
        break;
      case VendorOption::Kind::Raw:
        e.value.raw = reinterpret_cast<void*>(o.raw_value);
        break;
    }
  }
  layout_.ext = ext_.empty() ? nullptr : ext_.data();
}

}  // namespace nccl_core::collectives
