// The SlurmApi over libslurm's C API: the only file of the project that includes slurm.h.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <mutex>

#include "gavel/slurm/slurm_api.h"

extern char** environ;

namespace gavel::slurm {
namespace {

std::string Text(const char* text) { return text == nullptr ? "" : text; }

// slurmctld's last error as a Status naming the call.
Status SlurmError(const std::string& call) {
  const int code = slurm_get_errno();
  return Status::IoError(call + ": " + Text(slurm_strerror(code)) + " (slurm error " +
                             std::to_string(code) + ")");
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const std::size_t at = text.find(',', start);
    out.push_back(text.substr(start, at == std::string::npos ? at : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

std::string NodeStateName(std::uint32_t state) {
  std::string name;
  switch (state & NODE_STATE_BASE) {
    case NODE_STATE_DOWN: name = "DOWN"; break;
    case NODE_STATE_IDLE: name = "IDLE"; break;
    case NODE_STATE_ALLOCATED: name = "ALLOCATED"; break;
    case NODE_STATE_MIXED: name = "MIXED"; break;
    case NODE_STATE_FUTURE: name = "FUTURE"; break;
    default: name = "UNKNOWN"; break;
  }
  if ((state & NODE_STATE_DRAIN) != 0) name += "+DRAIN";
  if ((state & NODE_STATE_FAIL) != 0) name += "+FAIL";
  if ((state & NODE_STATE_NO_RESPOND) != 0) name += "+NOT_RESPONDING";
  return name;
}

std::string JobStateName(std::uint32_t state) {
  static constexpr const char* kNames[] = {"PENDING",   "RUNNING", "SUSPENDED", "COMPLETED",
                                           "CANCELLED", "FAILED",  "TIMEOUT",   "NODE_FAIL",
                                           "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
  const std::uint32_t base = state & JOB_STATE_BASE;
  std::string name = base < JOB_END ? kNames[base] : "UNKNOWN";
  if ((state & JOB_COMPLETING) != 0) name += "+COMPLETING";
  if ((state & JOB_REQUEUE) != 0) name += "+REQUEUED";
  return name;
}

class LibSlurmApi final : public SlurmApi {
 public:
  Result<std::vector<SlurmNode>> Nodes() override {
    node_info_msg_t* message = nullptr;
    if (slurm_load_node(0, &message, SHOW_ALL) != SLURM_SUCCESS) {
      return SlurmError("slurm_load_node");
    }
    std::vector<SlurmNode> nodes;
    for (std::uint32_t i = 0; i < message->record_count; ++i) {
      const node_info_t& info = message->node_array[i];
      if (info.name == nullptr) continue;  // a hidden or future slot
      SlurmNode node;
      node.name = info.name;
      node.state = NodeStateName(info.node_state);
      const std::uint32_t base = info.node_state & NODE_STATE_BASE;
      node.schedulable =
          (base == NODE_STATE_IDLE || base == NODE_STATE_ALLOCATED || base == NODE_STATE_MIXED) &&
          (info.node_state & (NODE_STATE_DRAIN | NODE_STATE_FAIL | NODE_STATE_NO_RESPOND)) == 0;
      node.gres = Text(info.gres);
      node.partitions = SplitCommas(Text(info.partitions));
      nodes.push_back(std::move(node));
    }
    slurm_free_node_info_msg(message);
    return nodes;
  }

  Result<std::vector<SlurmJob>> Jobs() override {
    job_info_msg_t* message = nullptr;
    if (slurm_load_jobs(0, &message, SHOW_ALL) != SLURM_SUCCESS) {
      return SlurmError("slurm_load_jobs");
    }
    std::vector<SlurmJob> jobs;
    for (std::uint32_t i = 0; i < message->record_count; ++i) {
      const slurm_job_info_t& info = message->job_array[i];
      SlurmJob job;
      job.id = info.job_id;
      job.name = Text(info.name);
      job.state = JobStateName(info.job_state);
      const std::uint32_t base = info.job_state & JOB_STATE_BASE;
      job.active = base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED ||
                   (info.job_state & (JOB_COMPLETING | JOB_REQUEUE | JOB_CONFIGURING)) != 0;
      job.nodes = Text(info.nodes);
      job.array_job_id = info.array_job_id;
      jobs.push_back(std::move(job));
    }
    slurm_free_job_info_msg(message);
    return jobs;
  }

  Result<std::uint32_t> Submit(const BatchJob& job) override {
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    // libslurm takes char*, and copies what it sends: the strings stay ours.
    std::string name = job.name, script = job.script, partition = job.partition,
                node = job.node, tres = job.tres_per_node, work_dir = job.work_dir,
                output = job.output, array = job.array;
    // The submitter's whole environment, as sbatch's default --export=ALL passes it.
    std::uint32_t env_size = 0;
    while (environ[env_size] != nullptr) ++env_size;
    desc.name = name.data();
    desc.script = script.data();
    if (!partition.empty()) desc.partition = partition.data();
    if (!node.empty()) desc.req_nodes = node.data();
    if (!array.empty()) desc.array_inx = array.data();
    desc.min_nodes = 1;
    desc.max_nodes = 1;
    if (!tres.empty()) desc.tres_per_node = tres.data();
    desc.work_dir = work_dir.data();
    desc.std_out = output.data();
    desc.std_err = output.data();
    desc.requeue = job.requeue ? 1 : 0;
    // One CPU per GPU lets the pilot run a step per GPU at once (docs/slurm.md, "Steps").
    std::string cpus_per_tres =
        job.cpus_per_gpu > 0 ? "gres:gpu:" + std::to_string(job.cpus_per_gpu) : "";
    if (!cpus_per_tres.empty()) desc.cpus_per_tres = cpus_per_tres.data();
    desc.environment = environ;
    desc.env_size = env_size;
    desc.user_id = ::getuid();
    desc.group_id = ::getgid();
    submit_response_msg_t* response = nullptr;
    if (slurm_submit_batch_job(&desc, &response) != SLURM_SUCCESS) {
      return SlurmError("submitting '" + job.name + "'" +
                        (job.node.empty() ? std::string() : " to node " + job.node));
    }
    const std::uint32_t id = response->job_id;
    slurm_free_submit_response_response_msg(response);
    return id;
  }

  Status Signal(std::uint32_t job_id, int signal) override {
    if (slurm_kill_job(job_id, static_cast<std::uint16_t>(signal), 0) != SLURM_SUCCESS) {
      return SlurmError("signalling Slurm job " + std::to_string(job_id));
    }
    return Status::Ok();
  }

  Status SignalBatch(std::uint32_t job_id, int signal) override {
    if (slurm_kill_job(job_id, static_cast<std::uint16_t>(signal), KILL_JOB_BATCH) !=
        SLURM_SUCCESS) {
      return SlurmError("signalling the batch script of Slurm job " + std::to_string(job_id));
    }
    return Status::Ok();
  }

  Result<std::vector<SlurmStep>> Steps(std::uint32_t job_id) override {
    job_step_info_response_msg_t* message = nullptr;
    if (slurm_get_job_steps(0, job_id, NO_VAL, &message, SHOW_ALL) != SLURM_SUCCESS) {
      // A job that ended has no steps: not an error for the caller.
      if (slurm_get_errno() == ESLURM_INVALID_JOB_ID) return std::vector<SlurmStep>{};
      return SlurmError("slurm_get_job_steps of job " + std::to_string(job_id));
    }
    std::vector<SlurmStep> steps;
    for (std::uint32_t i = 0; i < message->job_step_count; ++i) {
      const job_step_info_t& info = message->job_steps[i];
      if (info.step_id.step_id >= SLURM_MAX_NORMAL_STEP_ID) continue;  // batch, extern, ...
      steps.push_back({info.step_id.job_id, info.step_id.step_id, Text(info.name),
                       Text(info.tres_per_node), Text(info.nodes)});
    }
    slurm_free_job_step_info_response_msg(message);
    return steps;
  }

  Status SignalStep(std::uint32_t job_id, std::uint32_t step_id, int signal) override {
    // slurm_signal_job_step delivers the signal without marking the step cancelled: the
    // process decides how to end (the iterator checkpoints on SIGTERM).
    const int rc = signal == SIGKILL
                       ? slurm_kill_job_step(job_id, step_id, SIGKILL)
                       : slurm_signal_job_step(job_id, step_id, static_cast<std::uint32_t>(signal));
    if (rc != SLURM_SUCCESS) {
      return SlurmError("signalling Slurm step " + std::to_string(job_id) + "." +
                        std::to_string(step_id));
    }
    return Status::Ok();
  }
};

}  // namespace

Result<std::unique_ptr<SlurmApi>> MakeLibSlurmApi() {
  // slurm_init reads the configuration once per process; it aborts the process when no
  // slurm.conf exists, so check first and say which file was looked for.
  const char* conf = std::getenv("SLURM_CONF");
  const std::string path = conf != nullptr ? conf : "/etc/slurm/slurm.conf";
  if (::access(path.c_str(), R_OK) != 0) {
    return Status::FailedPrecondition("no readable Slurm configuration at '" + path +
                                      "' (set SLURM_CONF; scripts/slurm-dev-cluster.sh prints it)");
  }
  static std::once_flag once;
  std::call_once(once, [] { slurm_init(nullptr); });
  return std::unique_ptr<SlurmApi>(std::make_unique<LibSlurmApi>());
}

}  // namespace gavel::slurm
