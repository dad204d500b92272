#include "gavel/daemon/agent_executor.h"

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

AgentExecutor::AgentExecutor(AgentExecutorOptions options, AgentExecutorParts parts)
    : options_(std::move(options)), parts_(std::move(parts)) {
  GAVEL_CHECK(parts_.jobs && parts_.agents && parts_.schedule && parts_.transport &&
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
    const std::uint64_t job_id = a.combination.member(0).value();
    Job& job = parts_.jobs->at(job_id);
    const std::vector<std::uint64_t> workers = parts_.schedule->WorkersOf(a);
    if (!JobBook::IsActive(job) || job.row.next_retry_ms > now) {
      // Not runnable now. The RoundScheduler holds jobs that back off out of its plans, so
      // this is a safety net (e.g. the wall clock stepped back): its GPUs idle this round,
      // and the RoundScheduler hears at once that nothing ran.
      parts_.schedule->Skip(a);
      continue;
    }
    placed.insert(job_id);
    Launch(a, job, workers, requests);
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

void AgentExecutor::Launch(const mechanism::Assignment& a, Job& job,
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
  const std::string& gpu_type = parts_.schedule->GpuTypeName(a.gpu_type);
  round.AddJob(job_id, workers, gpu_type);
  const Agent* rank0 = parts_.agents->AgentOfWorker(workers.front());
  for (std::size_t rank = 0; rank < workers.size(); ++rank) {
    const std::uint64_t w = workers[rank];
    const Agent* agent = parts_.agents->AgentOfWorker(w);
    GAVEL_CHECK(agent != nullptr);
    wire::Task* wt = requests[agent->row.agent_id].add_tasks();
    wt->set_worker_id(w);
    wire::JobLaunch* launch = wt->mutable_job();
    launch->set_job_id(job_id);
    *launch->mutable_command() = job.row.spec.command();
    launch->set_working_directory(job.row.spec.working_directory());
    *launch->mutable_env() = job.row.spec.env();
    launch->set_total_steps(job.row.spec.total_steps());
    launch->set_checkpointed_steps(job.row.steps_done);
    launch->set_world_size(static_cast<std::uint32_t>(workers.size()));
    launch->set_rank(static_cast<std::uint32_t>(rank));
    if (workers.size() > 1) {
      launch->set_master_addr(HostOf(rank0->row.address));
      launch->set_master_port(static_cast<std::uint32_t>(20000 + job_id % 40000));
    }
    launch->set_attempt(job.row.attempts == 0 ? 0 : job.row.attempts - 1);
    launch->set_job_type(job.row.spec.job_type());
    launch->set_gpu_type(gpu_type);
    if (!options_.checkpoint_root.empty()) {
      launch->set_checkpoint_dir(options_.checkpoint_root + "/job-" + std::to_string(job_id));
    }
    wire::Lease* lease = wt->mutable_lease();
    lease->set_stop_at_step(job.row.spec.total_steps());
    lease->set_max_duration_s(options_.round_length.value());
    lease->set_round_end_unix_ms(round.end_ms());
  }
  if (!continuing) {
    parts_.journal->Log(now, "start", job_id, workers.front(),
                        "round " + std::to_string(round.id()) + " on " +
                            std::to_string(workers.size()) + " " + gpu_type + ", from step " +
                            std::to_string(job.row.steps_done));
  }
}

}  // namespace gavel::daemon
