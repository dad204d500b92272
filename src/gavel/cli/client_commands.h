// The client commands of the runtime, thin over the Scheduler service (scheduler.proto):
//
//   gavel submit  --scheduler ADDR [--token-file F] --steps N [--scale-factor 1]
//                 [--job-type "ResNet-18 (batch size 64)"] [--priority-weight W] [--entity E]
//                 [--throughput TYPE=STEPS_PER_S ...] [--name N] [--env K=V ...] -- COMMAND...
//   gavel submit  --scheduler ADDR --job-file jobs.json      (one object, or a list of them)
//   gavel jobs    --scheduler ADDR [--all] [-o table|json] [JOB_ID...]
//   gavel cancel  --scheduler ADDR JOB_ID...
//   gavel workers --scheduler ADDR [-o table|json]
//   gavel status  --scheduler ADDR [-o table|json]
//
// `submit` prints each new job's id on its own line; the table outputs are aligned columns
// (Slurm/kubectl style) and `-o json` is the stable machine contract (docs/runtime.md).
// `jobs` lists the queued and running jobs, as Slurm's `squeue` does; `--all` adds the
// finished ones (done, failed, cancelled), and jobs named by id are shown whatever their state.
// Errors (unreachable scheduler, refused token, bad job spec) go to stderr with exit code 1.
// Thread-compatible free functions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gavel/cli/job_file.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/wire/scheduler.grpc.pb.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::cli {

struct ClientOptions {
  std::string scheduler = "127.0.0.1:50060";
  std::string token_file;
  double timeout_seconds = 30.0;
  std::string tls_ca;  // PEM CA: reach a TLS scheduler (--tls-ca); empty = plaintext
};

// A connected stub and the caller's token, for every client command.
struct Connection {
  std::unique_ptr<wire::Scheduler::Stub> stub;
  std::string token;
  Seconds timeout{30.0};
  // The call's token and deadline; waits for a dropped connection to come back.
  void Prepare(grpc::ClientContext* context) const;
};
// Errors: a bad address (naming --scheduler), an unreadable token file, nothing answering
// within min(5 s, the timeout).
Result<Connection> Connect(const ClientOptions& client);

struct SubmitOptions {
  std::uint64_t steps = 0;
  std::uint32_t scale_factor = 1;
  std::string job_type = "ResNet-18 (batch size 64)";
  double priority_weight = 1.0;
  std::string entity;
  std::vector<std::string> throughputs;  // TYPE=STEPS_PER_S
  std::vector<std::string> env;          // KEY=VALUE
  std::string name;
  std::string working_directory;
  // The field's schedulers (docs/runtime.md, "The field's schedulers under gavel serve").
  std::string app;           // --app: Themis' app name (per user); empty = its own app
  std::string utility;       // --utility: text form (core/utility.h); empty = none
  double cpus_per_gpu = 0.0;    // --cpus-per-gpu
  double mem_gb_per_gpu = 0.0;  // --mem-gb-per-gpu
  std::string job_file;
  std::vector<std::string> command;
};

// `gavel jobs --limit N --page-token T`: one page of at most N jobs after T (the token the
// previous page printed); without --limit every page is fetched, one bounded response at a
// time (scheduler.proto, ListJobsRequest).
struct JobsPaging {
  std::optional<std::uint32_t> limit;
  std::string page_token;
};

// Which jobs `gavel jobs` lists.
enum class JobsView {
  kActive,  // queued and running (the default without job ids)
  kAll,     // every job, finished ones too (--all, or job ids given)
};
// The view of `gavel jobs [--all] [JOB_ID...]`: the ids a user names are shown whatever their
// state.
JobsView ViewOf(bool all, const std::vector<std::uint64_t>& ids);

struct ClientCommandOptions {
  ClientOptions client;
  SubmitOptions submit;
  std::string output = "table";
  bool all_jobs = false;  // jobs --all (--active, the default view, is accepted for scripts)
  std::vector<std::uint64_t> job_ids;
  JobsPaging paging;
  CLI::App* submit_cmd = nullptr;
  CLI::App* jobs_cmd = nullptr;
  CLI::App* cancel_cmd = nullptr;
  CLI::App* workers_cmd = nullptr;
  CLI::App* status_cmd = nullptr;
};

// Declares submit, jobs, cancel, workers and status on `app`, bound to `options`.
void AddClientCommands(CLI::App& app, ClientCommandOptions* options);
// Runs whichever of them was parsed; nullopt when none was. Returns the exit code.
std::optional<int> RunClientCommands(const ClientCommandOptions& options);

// The pieces, for tests.
Result<wire::JobSpec> SpecFromFlags(const SubmitOptions& options);
Status RunSubmit(const ClientOptions& client, const SubmitOptions& options, std::ostream& out);
Status RunJobs(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
               JobsView view, const std::string& output, std::ostream& out);
Status RunJobs(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
               JobsView view, const JobsPaging& paging, const std::string& output,
               std::ostream& out);
Status RunCancel(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
                 std::ostream& out);
Status RunWorkers(const ClientOptions& client, const std::string& output, std::ostream& out);
Status RunStatus(const ClientOptions& client, const std::string& output, std::ostream& out);

// Renderings (exposed for tests).
std::string JobStateName(wire::JobState state);  // "queued", "running", ...
std::string JobsJson(const wire::ListJobsResponse& jobs);
void PrintJobsTable(const wire::ListJobsResponse& jobs, std::int64_t now_ms, std::ostream& out);

}  // namespace gavel::cli
