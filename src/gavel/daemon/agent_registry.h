// AgentRegistry: the daemon's agents and their GPUs — who registered, under which worker ids,
// at which address with which callback token, owned by which identity, alive or dead (heartbeats), and each GPU's busy time.
//
// Worker ids are the daemon's, durable, never reused: an agent that re-registers with another
// GPU count or type gets fresh ids. Every change is staged in the Journal. The registry knows
// nothing of jobs or rounds; the live GPUs it lists become the RoundScheduler's cluster
// (LiveLayout).
// Thread-safety: none (the core thread).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/daemon/agent_transport.h"
#include "gavel/daemon/journal.h"
#include "gavel/daemon/store.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/rpc/auth.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::daemon {

// Space sharing (packing policies): each GPU has a second process slot, addressed by a worker
// id of its own — the GPU's id with kPartnerSlotBit set — which the agent runs on the same
// device (RegisterWorkerResponse.partner_worker_ids). Nothing stores these ids: they follow
// from the GPU's, so the registry, the open round and the store need no second numbering.
// Only the GPU's own id is part of the cluster (LiveLayout, ListWorkers, busy time).
inline constexpr std::uint64_t kPartnerSlotBit = std::uint64_t{1} << 40;
inline std::uint64_t PartnerSlotOf(std::uint64_t gpu_worker) {
  return gpu_worker | kPartnerSlotBit;
}
inline std::uint64_t GpuOfSlot(std::uint64_t worker) { return worker & ~kPartnerSlotBit; }
inline bool IsPartnerSlot(std::uint64_t worker) { return (worker & kPartnerSlotBit) != 0; }
// The other slot of the same GPU.
inline std::uint64_t TwinSlotOf(std::uint64_t worker) { return worker ^ kPartnerSlotBit; }

struct Agent {
  AgentRow row;
  std::int64_t last_heartbeat_ms = 0;
};

// What an agent's GPUs must satisfy to join.
struct AgentRules {
  const ThroughputTable* throughputs = nullptr;  // GPU types must be its
  // Under a cost policy, the priced types (others are refused); null = any type.
  const std::map<std::string, double>* required_prices = nullptr;
  std::string policy;  // for error messages
};

class AgentRegistry {
 public:
  AgentRegistry(Journal* journal, AgentRules rules) : journal_(journal), rules_(std::move(rules)) {}

  // Takes the stored agents back; each gets until now + heartbeat timeout to reattach.
  void Restore(std::vector<AgentRow> rows, std::uint64_t next_worker_id, std::int64_t now);

  // Validates and records a registration (new agent, changed GPUs, or a reattach) as owned by
  // `caller` (whose role the daemon checked). Sets `*gpus_changed` when the live GPU set
  // changed. Errors name the request's field; kPermissionDenied when the agent id is owned by
  // another identity and `caller` is not an admin.
  Result<const Agent*> Register(const rpc::Principal& caller,
                                const wire::RegisterWorkerRequest& request, std::int64_t now,
                                bool* gpus_changed);
  // Records a heartbeat; false for an unknown or dead agent (it must register again).
  bool Heartbeat(const std::string& agent_id, std::int64_t now);
  // Whether `caller` may speak for `agent_id` (Heartbeat, ReportDone): only the identity that
  // registered it, admins included (a report forged for another agent's GPU would credit or
  // fail its jobs). True for an unknown agent id (the calls answer "register first").
  bool MaySpeakFor(const rpc::Principal& caller, const std::string& agent_id) const;
  // Marks agents silent for longer than `timeout_ms` dead; returns their ids.
  std::vector<std::string> DeclareSilentDead(std::int64_t now, std::int64_t timeout_ms);

  const Agent* Find(const std::string& agent_id) const;
  // Both accept a GPU's partner slot id too (the slot belongs to the GPU's agent).
  const Agent* AgentOfWorker(std::uint64_t worker_id) const;
  bool OwnsWorker(const std::string& agent_id, std::uint64_t worker_id) const;
  AgentEndpoint Endpoint(const Agent& agent) const {
    return AgentEndpoint{agent.row.agent_id, agent.row.address, agent.row.token};
  }
  // A report is a sign of life.
  void Touch(const std::string& agent_id, std::int64_t now);
  // A partner slot adds nothing: its GPU's time is counted once, by the GPU's own slot.
  void AddBusySeconds(std::uint64_t worker_id, double seconds);

  const std::map<std::string, Agent>& agents() const { return agents_; }
  std::vector<std::string> LiveGpuTypes() const;  // sorted
  int LiveGpus() const;
  // The cluster of the live GPUs (types in the original's order v100, p100, k80, then by
  // name) and, by layout worker id, the daemon's worker ids; its host resources are what the
  // agents advertise (HostResourcesOf). FailedPrecondition: no live GPU.
  Result<mechanism::ClusterLayout> LiveLayout(std::vector<std::uint64_t>* workers) const;
  // One WorkerInfo per GPU, by worker id; `busy_job(worker)` = the job it runs, or 0.
  void ListWorkers(std::int64_t now, wire::ListWorkersResponse* out,
                   const std::function<std::uint64_t(std::uint64_t)>& busy_job) const;

 private:
  static mechanism::HostResources HostResourcesOf(
      const std::map<std::string, std::vector<const Agent*>>& by_type,
      const mechanism::ClusterLayout& layout);
  void Dirty(const Agent& agent) { journal_->dirty_agents.insert(agent.row.agent_id); }
  bool Usable(const std::string& gpu_type) const {
    return rules_.required_prices == nullptr || rules_.required_prices->contains(gpu_type);
  }

  Journal* journal_;
  AgentRules rules_;
  std::map<std::string, Agent> agents_;
  std::map<std::uint64_t, std::string> worker_agent_;  // worker id -> agent id
  std::uint64_t next_worker_id_ = 0;
};

}  // namespace gavel::daemon
