#include "backend/membership.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>

#include "util/checked.h"
#include "util/torch_errors.h"

namespace nccl_core::membership {

namespace {

constexpr const char* kPrefix = "nccl_core:";

void check_handle(const std::string& h, size_t index) {
  NCCL_CORE_CHECK_VALUE(h.rfind(kPrefix, 0) == 0 && h.size() > std::char_traits<char>::length(kPrefix),
                        "nccl_core reconfigure: handle ", index, " (\"", h,
                        "\") is not an nccl_core handle (dist._get_reconfigure_handle() of an "
                        "nccl_core group)");
}

}  // namespace

std::string new_handle() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) {
    host[0] = '\0';
  }
  std::random_device device;
  uint64_t nonce = (static_cast<uint64_t>(device()) << 32) ^ device();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(nonce));
  return std::string(kPrefix) + host.data() + ":" + std::to_string(getpid()) + ":" + hex;
}

std::vector<std::string> ranked(
    const std::variant<std::unordered_set<std::string>, std::vector<std::string>>& handles) {
  std::vector<std::string> members;
  if (const auto* set = std::get_if<std::unordered_set<std::string>>(&handles)) {
    members.assign(set->begin(), set->end());
    std::sort(members.begin(), members.end());
  } else {
    members = std::get<std::vector<std::string>>(handles);
  }
  NCCL_CORE_CHECK_VALUE(!members.empty(), "nccl_core reconfigure: handles is empty");
  (void)checked::narrow<int, raise_value_error>(members.size(), "nccl_core reconfigure: members");
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < members.size(); ++i) {
    check_handle(members[i], i);
    NCCL_CORE_CHECK_VALUE(seen.insert(members[i]).second, "nccl_core reconfigure: handle ", i,
                          " (\"", members[i], "\") appears twice");
  }
  return members;
}

int rank_of(const std::vector<std::string>& members, const std::string& mine) {
  auto it = std::find(members.begin(), members.end(), mine);
  NCCL_CORE_CHECK_VALUE(it != members.end(), "nccl_core reconfigure: this process's handle (\"",
                        mine, "\") is not among the ", members.size(), " handles");
  return static_cast<int>(it - members.begin());
}

std::vector<std::string> staying(const std::vector<std::string>& next,
                                 const std::vector<std::string>& now, const std::string& mine) {
  std::unordered_set<std::string> current(now.begin(), now.end());
  std::vector<std::string> out;
  for (const auto& h : next) {
    if (h != mine && current.count(h) != 0) {
      out.push_back(h);
    }
  }
  return out;
}

}  // namespace nccl_core::membership
