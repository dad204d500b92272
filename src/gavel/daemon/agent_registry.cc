#include "gavel/daemon/agent_registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "gavel/core/bounds.h"
#include "gavel/daemon/error_text.h"
#include "gavel/rpc/grpc_util.h"

namespace gavel::daemon {
namespace {

constexpr std::uint32_t kMaxGpusPerAgent = 1024;
// gRPC refuses metadata beyond 8 KiB: a longer callback token could never be presented.
constexpr std::size_t kMaxCallbackTokenBytes = 4096;
// The original's fixed type order; other types follow in name order.
const std::vector<std::string> kPreferredTypes = {"v100", "p100", "k80"};

bool PrintableId(const std::string& s, std::size_t max) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isgraph(static_cast<unsigned char>(c)) != 0;
  });
}

}  // namespace

void AgentRegistry::Restore(std::vector<AgentRow> rows, std::uint64_t next_worker_id,
                            std::int64_t now) {
  next_worker_id_ = next_worker_id;
  for (AgentRow& row : rows) {
    Agent agent;
    agent.row = std::move(row);
    agent.last_heartbeat_ms = now;  // a grace period to reattach
    for (std::uint32_t g = 0; g < agent.row.num_gpus; ++g) {
      worker_agent_[agent.row.first_worker_id + g] = agent.row.agent_id;
    }
    next_worker_id_ = std::max(next_worker_id_, agent.row.first_worker_id + agent.row.num_gpus);
    agents_.emplace(agent.row.agent_id, std::move(agent));
  }
}

Result<const Agent*> AgentRegistry::Register(const rpc::Principal& caller,
                                             const wire::RegisterWorkerRequest& request,
                                             std::int64_t now, bool* gpus_changed) {
  const ThroughputTable& table = *rules_.throughputs;
  if (!PrintableId(request.agent_id(), 128)) {
    return Status::InvalidArgument("agent_id: 1 to 128 printable characters without spaces");
  }
  if (!table.HasGpuType(request.gpu_type())) {
    std::string names;
    for (const std::string& n : table.gpu_types()) names += (names.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("gpu_type: " + Quoted(request.gpu_type()) +
                                   " is not a GPU type of the throughput table (" + names +
                                   "); measure it with `gavel profile --gpu-type " +
                                   request.gpu_type() + " --out FILE` and give gavel serve "
                                   "--throughputs-extra FILE");
  }
  if (!Usable(request.gpu_type())) {
    return Status::InvalidArgument("gpu_type: policy " + rules_.policy + " needs the price of " +
                                   Quoted(request.gpu_type()) +
                                   " GPUs, and gavel serve has none (--instance-costs)");
  }
  if (request.num_gpus() < 1 || request.num_gpus() > kMaxGpusPerAgent) {
    return Status::InvalidArgument("num_gpus: must be in 1.." + std::to_string(kMaxGpusPerAgent));
  }
  Result<rpc::HostPort> address = rpc::ParseAddress(request.address());
  if (!address.ok() || address->port == 0) {
    return Status::InvalidArgument("address: " + Quoted(request.address()) +
                                   " is not host:port with a port in 1..65535");
  }
  if (request.callback_token().size() > kMaxCallbackTokenBytes) {
    return Status::InvalidArgument("callback_token: at most " +
                                   std::to_string(kMaxCallbackTokenBytes) + " bytes");
  }
  GAVEL_RETURN_IF_ERROR(
      bounds::CheckRange(request.host_cpus(), 0.0, bounds::kMaxHostCpus, "host_cpus", " CPUs"));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(request.host_mem_gb(), 0.0, bounds::kMaxHostMemGb,
                                           "host_mem_gb", " GB"));
  auto it = agents_.find(request.agent_id());
  // An agent id belongs to the identity that first registered it: another agent taking it
  // over would receive its rounds and could report for its GPUs. Admins may reassign it.
  if (it != agents_.end() && !it->second.row.owner.empty() &&
      it->second.row.owner != caller.user && !caller.admin) {
    return Status::PermissionDenied("agent_id: " + Quoted(request.agent_id()) +
                                    " was registered by another identity; only it or an admin "
                                    "may register it again");
  }
  bool changed = false;
  if (it == agents_.end()) {
    Agent agent;
    agent.row.agent_id = request.agent_id();
    agent.row.registered_ms = now;
    it = agents_.emplace(request.agent_id(), std::move(agent)).first;
    changed = true;
  }
  Agent& agent = it->second;
  if (changed || agent.row.num_gpus != request.num_gpus() ||
      agent.row.gpu_type != request.gpu_type()) {
    // New GPUs get new worker ids; the old ones (if any) are retired.
    for (std::uint32_t g = 0; g < agent.row.num_gpus; ++g) {
      worker_agent_.erase(agent.row.first_worker_id + g);
    }
    agent.row.first_worker_id = next_worker_id_;
    agent.row.num_gpus = request.num_gpus();
    agent.row.gpu_type = request.gpu_type();
    agent.row.busy_seconds.assign(request.num_gpus(), 0.0);
    next_worker_id_ += request.num_gpus();
    journal_->batch.meta["next_worker_id"] = std::to_string(next_worker_id_);
    for (std::uint32_t g = 0; g < agent.row.num_gpus; ++g) {
      worker_agent_[agent.row.first_worker_id + g] = agent.row.agent_id;
    }
    changed = true;
  }
  if (!agent.row.alive) changed = true;
  // Other host resources change the cluster the policies see (drf, tetris).
  if (agent.row.host_cpus != request.host_cpus() ||
      agent.row.host_mem_gb != request.host_mem_gb()) {
    changed = true;
  }
  agent.row.host_cpus = request.host_cpus();
  agent.row.host_mem_gb = request.host_mem_gb();
  agent.row.alive = true;
  agent.row.address = request.address();
  agent.row.token = request.callback_token();
  agent.row.owner = caller.user;
  agent.last_heartbeat_ms = now;
  Dirty(agent);
  journal_->Log(now, changed ? "worker-register" : "worker-reattach", 0,
                agent.row.first_worker_id,
                "agent " + agent.row.agent_id + ": " + std::to_string(agent.row.num_gpus) + " " +
                    agent.row.gpu_type + " at " + agent.row.address + ", " +
                    std::to_string(request.running_size()) + " GPUs busy");
  *gpus_changed = changed;
  return &agent;
}

bool AgentRegistry::Heartbeat(const std::string& agent_id, std::int64_t now) {
  const auto it = agents_.find(agent_id);
  if (it == agents_.end() || !it->second.row.alive) return false;
  it->second.last_heartbeat_ms = now;
  return true;
}

std::vector<std::string> AgentRegistry::DeclareSilentDead(std::int64_t now,
                                                          std::int64_t timeout_ms) {
  std::vector<std::string> dead;
  for (auto& [id, agent] : agents_) {
    if (!agent.row.alive || now - agent.last_heartbeat_ms <= timeout_ms) continue;
    agent.row.alive = false;
    Dirty(agent);
    journal_->Log(now, "worker-dead", 0, agent.row.first_worker_id,
                  "agent " + id + ": no heartbeat for " +
                      std::to_string((now - agent.last_heartbeat_ms) / 1000) + " s");
    dead.push_back(id);
  }
  return dead;
}

bool AgentRegistry::MaySpeakFor(const rpc::Principal& caller,
                                const std::string& agent_id) const {
  const auto it = agents_.find(agent_id);
  // An empty owner is a row migrated from schema 1, dead until its agent registers again.
  return it == agents_.end() || it->second.row.owner.empty() ||
         it->second.row.owner == caller.user;
}

const Agent* AgentRegistry::Find(const std::string& agent_id) const {
  const auto it = agents_.find(agent_id);
  return it == agents_.end() ? nullptr : &it->second;
}

const Agent* AgentRegistry::AgentOfWorker(std::uint64_t worker_id) const {
  const auto it = worker_agent_.find(GpuOfSlot(worker_id));
  return it == worker_agent_.end() ? nullptr : Find(it->second);
}

bool AgentRegistry::OwnsWorker(const std::string& agent_id, std::uint64_t worker_id) const {
  const auto it = worker_agent_.find(GpuOfSlot(worker_id));
  return it != worker_agent_.end() && it->second == agent_id;
}

void AgentRegistry::Touch(const std::string& agent_id, std::int64_t now) {
  const auto it = agents_.find(agent_id);
  if (it != agents_.end() && it->second.row.alive) it->second.last_heartbeat_ms = now;
}

void AgentRegistry::AddBusySeconds(std::uint64_t worker_id, double seconds) {
  if (IsPartnerSlot(worker_id)) return;
  const auto owner = worker_agent_.find(worker_id);
  if (owner == worker_agent_.end()) return;
  Agent& agent = agents_.at(owner->second);
  const std::uint64_t g = worker_id - agent.row.first_worker_id;
  if (g < agent.row.busy_seconds.size()) agent.row.busy_seconds[g] += seconds;
  Dirty(agent);
}

std::vector<std::string> AgentRegistry::LiveGpuTypes() const {
  std::set<std::string> types;
  for (const auto& [id, agent] : agents_) {
    if (agent.row.alive) types.insert(agent.row.gpu_type);
  }
  return {types.begin(), types.end()};
}

int AgentRegistry::LiveGpus() const {
  int gpus = 0;
  for (const auto& [id, agent] : agents_) {
    if (agent.row.alive) gpus += static_cast<int>(agent.row.num_gpus);
  }
  return gpus;
}

// The layout's host resources per server (it assumes every server alike): each resource is
// limited only when every live agent advertises it, and then to the smallest share any agent
// offers per layout server (an agent of g GPUs holds g / gpus_per_server servers), so that
// the policies never count on more than some agent has. Equal agents give their exact total.
mechanism::HostResources AgentRegistry::HostResourcesOf(
    const std::map<std::string, std::vector<const Agent*>>& by_type,
    const mechanism::ClusterLayout& layout) {
  double cpus = std::numeric_limits<double>::infinity();
  double mem = std::numeric_limits<double>::infinity();
  for (const auto& [type, agents] : by_type) {
    const int t = layout.TypeIndex(type);
    const double per_server = t < 0 ? 1.0 : layout.gpus_per_server(t);
    for (const Agent* a : agents) {
      const double servers = static_cast<double>(a->row.num_gpus) / per_server;
      cpus = std::min(cpus, a->row.host_cpus / servers);
      mem = std::min(mem, a->row.host_mem_gb / servers);
    }
  }
  mechanism::HostResources host;
  host.cpus_per_server = std::isfinite(cpus) ? cpus : 0.0;  // an agent without: 0, unlimited
  host.mem_gb_per_server = std::isfinite(mem) ? mem : 0.0;
  return host;
}

Result<mechanism::ClusterLayout> AgentRegistry::LiveLayout(
    std::vector<std::uint64_t>* workers) const {
  workers->clear();
  std::map<std::string, std::vector<const Agent*>> by_type;
  for (const auto& [id, agent] : agents_) {
    // Under a cost policy an unpriced type cannot be used (Register refuses such agents; a
    // state directory written under another policy may still list one).
    if (agent.row.alive && Usable(agent.row.gpu_type)) {
      by_type[agent.row.gpu_type].push_back(&agent);
    }
  }
  if (by_type.empty()) return Status::FailedPrecondition("no live GPU");
  std::vector<GpuTypeSpec> specs;
  std::vector<std::string> order;
  for (const std::string& t : kPreferredTypes) {
    if (by_type.contains(t)) order.push_back(t);
  }
  for (const auto& [t, agents] : by_type) {
    if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
  }
  for (const std::string& t : order) {
    int count = 0;
    int per_server = 0;
    for (const Agent* a : by_type[t]) {
      count += static_cast<int>(a->row.num_gpus);
      per_server = std::gcd(per_server, static_cast<int>(a->row.num_gpus));
    }
    specs.push_back(GpuTypeSpec{t, count, std::max(per_server, 1)});
  }
  GAVEL_ASSIGN_OR_RETURN(mechanism::ClusterLayout layout, mechanism::ClusterLayout::Create(specs));
  GAVEL_RETURN_IF_ERROR(layout.SetHostResources(HostResourcesOf(by_type, layout)));
  // Layout ids run type after type in name order, servers in a row: walk agents the same way.
  for (const auto& [t, agents] : by_type) {
    std::vector<const Agent*> sorted = agents;
    std::sort(sorted.begin(), sorted.end(), [](const Agent* a, const Agent* b) {
      return a->row.first_worker_id < b->row.first_worker_id;
    });
    for (const Agent* a : sorted) {
      for (std::uint32_t g = 0; g < a->row.num_gpus; ++g) {
        workers->push_back(a->row.first_worker_id + g);
      }
    }
  }
  GAVEL_CHECK(static_cast<int>(workers->size()) == layout.num_workers());
  return layout;
}

void AgentRegistry::ListWorkers(std::int64_t now, wire::ListWorkersResponse* out,
                                const std::function<std::uint64_t(std::uint64_t)>& busy_job) const {
  std::vector<const Agent*> sorted;
  for (const auto& [id, agent] : agents_) sorted.push_back(&agent);
  std::sort(sorted.begin(), sorted.end(), [](const Agent* a, const Agent* b) {
    return a->row.first_worker_id < b->row.first_worker_id;
  });
  for (const Agent* agent : sorted) {
    for (std::uint32_t g = 0; g < agent->row.num_gpus; ++g) {
      const std::uint64_t worker = agent->row.first_worker_id + g;
      wire::WorkerInfo* info = out->add_workers();
      info->set_worker_id(worker);
      info->set_agent_id(agent->row.agent_id);
      info->set_gpu_type(agent->row.gpu_type);
      info->set_address(agent->row.address);
      info->set_alive(agent->row.alive);
      info->set_last_heartbeat_age_s(static_cast<double>(now - agent->last_heartbeat_ms) /
                                     1000.0);
      info->set_registered_unix_ms(agent->row.registered_ms);
      info->set_busy_seconds(g < agent->row.busy_seconds.size() ? agent->row.busy_seconds[g]
                                                                : 0.0);
      if (const std::uint64_t job = busy_job(worker); job != 0) {
        info->set_busy(true);
        info->set_job_id(job);
      }
    }
  }
}

}  // namespace gavel::daemon
