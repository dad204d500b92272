#include "gavel/mechanism/compat.h"

#include <utility>

namespace gavel::mechanism {
namespace {

// The one list of switches and their names.
constexpr std::pair<const char*, bool Compat::*> kSwitches[] = {
    {"policy", &Compat::policy},
    {"gated_reallocation", &Compat::gated_reallocation},
    {"reset_at_zero_means_never", &Compat::reset_at_zero_means_never},
    {"unallocated_stay_idle", &Compat::unallocated_stay_idle},
    {"raw_policy_input", &Compat::raw_policy_input},
    {"latest_first_delivery", &Compat::latest_first_delivery},
    {"idle_gap_booking", &Compat::idle_gap_booking},
    {"floor_step_split", &Compat::floor_step_split},
    {"slo_quirks", &Compat::slo_quirks},
    {"forgets_deficit", &Compat::forgets_deficit},
    {"estimator", &Compat::estimator},
};

}  // namespace

Compat Compat::Gavel() {
  Compat c;
  for (const auto& [name, member] : kSwitches) c.*member = true;
  return c;
}

bool Compat::any() const {
  for (const auto& [name, member] : kSwitches) {
    if (this->*member) return true;
  }
  return false;
}

bool Compat::all() const {
  for (const auto& [name, member] : kSwitches) {
    if (!(this->*member)) return false;
  }
  return true;
}

std::vector<std::string> Compat::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, member] : kSwitches) {
    if (this->*member) names.emplace_back(name);
  }
  return names;
}

std::vector<std::string> Compat::AllNames() {
  std::vector<std::string> names;
  for (const auto& [name, member] : kSwitches) names.emplace_back(name);
  return names;
}

Result<Compat> Compat::Parse(std::string_view text) {
  Compat c;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    const bool on = !item.starts_with('-');
    if (!on) item.remove_prefix(1);
    bool found = item == "none" || item == "gavel";
    if (item == "gavel") c = on ? Gavel() : None();
    for (const auto& [name, member] : kSwitches) {
      if (item == name) {
        c.*member = on;
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const std::string& n : AllNames()) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument("unknown compat switch \"" + std::string(item) +
                                     "\" (known: gavel, none, " + known + ")");
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return c;
}

}  // namespace gavel::mechanism
