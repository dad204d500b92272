#include "gavel/daemon/agent_executor.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/rpc/grpc_util.h"

namespace gavel::daemon {
namespace {

std::string HostOf(const std::string& address) {
  auto parsed = rpc::ParseAddress(address);
  return parsed.ok() ? parsed->host : "127.0.0.1";
}

}  // namespace

AgentExecutor::AgentExecutor(const CoreOptions* options, AgentExecutorParts parts)
    : options_(options), parts_(std::move(parts)) {
  GAVEL_CHECK(parts_.jobs && parts_.agents && parts_.seam && parts_.transport &&
              parts_.journal && parts_.round);
}

Status AgentExecutor::Execute(const mechanism::RoundPlan& plan) {
  GAVEL_CHECK(parts_.round->has_value());
  OpenRound& round = **parts_.round;
  const std::int64_t now = round.start_ms();

  // 1. One request per live agent, even an empty one.
  std::map<std::string, wire::StartRoundRequest> requests;
  for (const auto& [id, agent] : parts_.agents->agents()) {
    if (agent.row.alive) requests[id].set_round_id(round.id());
  }

  // 2. The plan's assignments.
  std::set<std::uint64_t> placed;
  for (const mechanism::Assignment& a : plan.assignments) {
    // A pair (space sharing) is two jobs on the same GPUs: the first on the GPUs' own slots,
    // the second on their partner slots (MechanismSeam::WorkersOf).
    const int members = a.combination.size();
    bool runnable = true;
    for (int m = 0; m < members; ++m) {
      const Job& job = parts_.jobs->at(a.combination.member(m).value());
      runnable = runnable && JobBook::IsActive(job) && job.row.next_retry_ms <= now;
      // A process of it may still run where it ran (its report is late): it may continue
      // there, but not start a second time elsewhere.
      runnable = runnable && (!job.report_outstanding ||
                              job.last_workers == parts_.seam->WorkersOf(a, m));
    }
    if (!runnable) {
      // Not runnable now: its process of the last round has not reported yet and the plan
      // moves it, or (a safety net: the RoundScheduler holds jobs that back off out of its
      // plans) the wall clock stepped back. Its GPUs idle this round, and the RoundScheduler
      // hears at once that nothing ran.
      parts_.seam->Skip(a);
      continue;
    }
    for (int m = 0; m < members; ++m) {
      const std::uint64_t job_id = a.combination.member(m).value();
      Job& job = parts_.jobs->at(job_id);
      const Job* partner =
          members == 2 ? &parts_.jobs->at(a.combination.member(1 - m).value()) : nullptr;
      placed.insert(job_id);
      Launch(a, job, partner, parts_.seam->WorkersOf(a, m), requests);
    }
  }

  // 3. Whatever is not placed waits.
  for (auto& [id, job] : *parts_.jobs) {
    if (placed.contains(id)) continue;
    job.paused = false;  // whatever waited on its GPUs is stopped by the agent
    if (job.row.state == wire::RUNNING) {
      job.row.state = wire::QUEUED;
      parts_.jobs->Touch(job);
    }
  }

  // 4. Durable with the next commit (a restarted daemon resumes the round).
  parts_.journal->batch.open_round = round.ToRow();

  // 5. Out to the agents.
  const std::uint64_t round_id = round.id();
  for (auto& [id, request] : requests) {
    parts_.transport->StartRound(parts_.agents->Endpoint(*parts_.agents->Find(id)),
                                 std::move(request),
                                 [this, id = id, round_id](Status status) {
                                   if (!status.ok() && parts_.dispatch_failed) {
                                     parts_.dispatch_failed(id, round_id);
                                   }
                                 });
  }
  return Status::Ok();
}

void AgentExecutor::Launch(const mechanism::Assignment& a, Job& job, const Job* partner,
                           const std::vector<std::uint64_t>& workers,
                           std::map<std::string, wire::StartRoundRequest>& requests) {
  OpenRound& round = **parts_.round;
  const std::int64_t now = round.start_ms();
  const std::uint64_t job_id = job.row.id;
  // The same job paused on the very same GPUs continues: the agent extends its lease.
  const bool continuing = job.paused && job.last_workers == workers;
  if (!continuing) {
    ++job.row.attempts;
    if (job.row.first_launch_ms == 0) job.row.first_launch_ms = now;
  }
  job.row.state = wire::RUNNING;
  parts_.jobs->Touch(job);
  const std::string& gpu_type = parts_.seam->GpuTypeName(a.gpu_type);
  round.AddJob(job_id, workers, gpu_type);
  const Agent* rank0 = parts_.agents->AgentOfWorker(workers.front());
  if (partner != nullptr) {
    job.partner_job = partner->row.id;
    job.partner_type = partner->row.spec.job_type();
    job.partner_gpu_type = gpu_type;
  }
  // A multi-GPU job's step bound comes from the rate it will run at: next to its partner, the
  // co-located estimate.
  const double rate = partner != nullptr ? parts_.jobs->ColocatedEstimate(job, *partner, gpu_type)
                                         : parts_.jobs->Estimate(job, gpu_type);
  const GangLease gang = GangLeaseOf(job, rate, workers);
  // Ranks on each agent, for torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE.
  std::map<std::string, std::uint32_t> per_agent;
  for (const std::uint64_t w : workers) ++per_agent[parts_.agents->AgentOfWorker(w)->row.agent_id];
  std::map<std::string, std::uint32_t> local_rank;
  for (std::size_t rank = 0; rank < workers.size(); ++rank) {
    const std::uint64_t w = workers[rank];
    const Agent* agent = parts_.agents->AgentOfWorker(w);
    GAVEL_CHECK(agent != nullptr);
    const std::string& agent_id = agent->row.agent_id;
    wire::Task* wt = requests[agent_id].add_tasks();
    wt->set_worker_id(w);
    wt->set_restart(gang.restart);
    wire::JobLaunch* launch = wt->mutable_job();
    launch->set_job_id(job_id);
    *launch->mutable_command() = job.row.spec.command();
    launch->set_working_directory(job.row.spec.working_directory());
    *launch->mutable_env() = job.row.spec.env();
    launch->set_total_steps(job.row.spec.total_steps());
    launch->set_checkpointed_steps(job.row.steps_done);
    launch->set_world_size(static_cast<std::uint32_t>(workers.size()));
    launch->set_rank(static_cast<std::uint32_t>(rank));
    launch->set_local_rank(local_rank[agent_id]++);
    launch->set_local_world_size(per_agent[agent_id]);
    // Every job gets a rendezvous, so a script calling init_process_group("env://") runs
    // unchanged on one GPU too.
    launch->set_master_addr(HostOf(rank0->row.address));
    launch->set_master_port(static_cast<std::uint32_t>(20000 + job_id % 40000));
    launch->set_attempt(job.row.attempts == 0 ? 0 : job.row.attempts - 1);
    launch->set_job_type(job.row.spec.job_type());
    launch->set_gpu_type(gpu_type);
    if (partner != nullptr) launch->set_partner_job_type(partner->row.spec.job_type());
    if (!options_->checkpoint_root.empty()) {
      launch->set_checkpoint_dir(options_->checkpoint_root + "/job-" + std::to_string(job_id));
    }
    wire::Lease* lease = wt->mutable_lease();
    lease->set_stop_at_step(gang.stop_at_step);
    lease->set_step_bound_only(gang.step_bound_only);
    lease->set_round_end_unix_ms(round.end_ms());
    // Rounds that begin on time end leases with the round, start-up included, so that the
    // reports are in at the boundary (worker.proto, Lease.startup_inside). The iterator ends a
    // time lease at the first step after its time, so such a lease is one step (at the job's
    // estimate) shorter than the round: it ends within it (`gavel simulate`'s model:
    // sim::PhysicsOptions::step_early_leases). A step longer than the round keeps the round.
    const bool startup_inside = options_->rounds_on_time && !gang.step_bound_only;
    lease->set_max_duration_s(
        (startup_inside ? mechanism::StepShortLease(options_->round_length, rate)
                        : options_->round_length)
            .value());
    lease->set_startup_inside(startup_inside);
  }
  if (!continuing) {
    parts_.journal->Log(now, "start", job_id, workers.front(),
                        "round " + std::to_string(round.id()) + " on " +
                            std::to_string(workers.size()) + " " + gpu_type + ", from step " +
                            std::to_string(job.row.steps_done) +
                            (partner != nullptr
                                 ? ", sharing with job " + std::to_string(partner->row.id)
                                 : std::string()));
  }
}

AgentExecutor::GangLease AgentExecutor::GangLeaseOf(const Job& job, double estimate,
                                                   const std::vector<std::uint64_t>& workers) const {
  const std::uint64_t total = job.row.spec.total_steps();
  GangLease gang;
  gang.stop_at_step = total;
  if (workers.size() < 2) return gang;  // one process: its own clock is the job's
  // A process kept from the last round can rejoin its peers only if every rank keeps its GPU.
  gang.restart = job.last_workers != workers;
  // One step bound for every rank, computed here once: the round's worth of steps at the
  // job's throughput estimate on this type (its measurement once there is one), at least one.
  // Rounds that begin on time fit the bound inside the round as they fit a time lease: the
  // expected start-up of a fresh launch (MechanismSeam::RestartCostOf) comes out of it, and
  // one step, so that the ranks report before the boundary (`gavel simulate`'s model:
  // sim::PhysicsOptions::step_early_leases).
  const double rate = std::max(0.0, estimate);
  const double round = options_->round_length.value();
  const double startup =
      options_->rounds_on_time && gang.restart ? parts_.seam->RestartCostOf(job) : 0.0;
  const double budget = options_->rounds_on_time
                            ? mechanism::StepShortBound(rate * std::max(0.0, round - startup))
                            : std::floor(rate * round);
  const auto steps = static_cast<std::uint64_t>(
      std::clamp(budget, 1.0, static_cast<double>(total)));
  gang.stop_at_step = std::min(total, job.row.steps_done + steps);
  gang.step_bound_only = true;
  // Kept processes that are still starting have not begun the lease they hold: the agents
  // extend it by nothing (their next stop is the current stop plus this grant), so the
  // rounds a slow start spans do not pile up steps for one lease.
  if (!gang.restart && job.still_starting) gang.stop_at_step = job.row.steps_done;
  return gang;
}

}  // namespace gavel::daemon
