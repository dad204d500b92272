#include "gavel/cli/client_commands.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/cli/display_text.h"
#include "gavel/cli/flag_bounds.h"
#include "gavel/cli/job_file.h"
#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"
#include "gavel/rpc/auth.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/tls.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::cli {
namespace {

using nlohmann::json;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Connection::Prepare(grpc::ClientContext* context) const {
  rpc::PrepareContext(context, timeout, token);
  // The channel is connected (Connect); should it drop, wait for it to come back rather
  // than fail at once. A call is only sent on a ready connection, so nothing is sent twice.
  context->set_wait_for_ready(true);
}

Result<Connection> Connect(const ClientOptions& client) {
  GAVEL_RETURN_IF_ERROR(rpc::ParseAddress(client.scheduler).status().WithContext("--scheduler"));
  Connection c;
  if (!client.token_file.empty()) {
    std::string warning;
    GAVEL_ASSIGN_OR_RETURN(c.token, rpc::ReadClientToken(client.token_file, &warning));
    if (!warning.empty()) std::cerr << "gavel: warning: " << warning << "\n";
  }
  Result<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      rpc::MakeChannelCredentials(client.tls_ca);
  if (!credentials.ok()) return credentials.status();
  auto channel = rpc::MakeChannel(client.scheduler, *std::move(credentials));
  // Fail fast, with a clear message, when nothing answers at the address.
  const double connect_s = std::min(client.timeout_seconds, 5.0);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 std::chrono::milliseconds(
                                     static_cast<std::int64_t>(connect_s * 1000.0)))) {
    return Status::IoError("cannot reach the scheduler at " + client.scheduler + " within " +
                           std::to_string(static_cast<int>(connect_s)) +
                           " s (is `gavel serve` running there?)");
  }
  c.stub = wire::Scheduler::NewStub(channel);
  c.timeout = Seconds(client.timeout_seconds);
  return c;
}

namespace {

std::string Duration(double seconds) {
  if (seconds < 0.0 || !std::isfinite(seconds)) return "-";
  auto s = static_cast<long long>(std::llround(seconds));
  std::ostringstream out;
  if (s >= 86400) {
    out << s / 86400 << "d" << (s % 86400) / 3600 << "h";
  } else if (s >= 3600) {
    out << s / 3600 << "h" << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  } else if (s >= 60) {
    out << s / 60 << "m" << std::setw(2) << std::setfill('0') << s % 60 << "s";
  } else {
    out << s << "s";
  }
  return out.str();
}

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// Aligned columns, two spaces apart, the header in capitals. Every cell is escaped
// (display_text.h): names and messages come from other users.
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& raw_rows, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(raw_rows.size());
  for (const auto& row : raw_rows) rows.push_back(EscapeRow(row));
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      text += cells[c];
      if (c + 1 < cells.size()) text += std::string(width[c] - cells[c].size() + 2, ' ');
    }
    out << text << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
}

Result<std::pair<std::string, std::string>> SplitPair(const std::string& text,
                                                      const std::string& flag) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument(flag + " " + text + ": expected KEY=VALUE");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

// Parses only: the rate's bound is CheckSpecBounds's, with the spec's other numbers.
Result<double> ParseRate(const std::string& text, const std::string& where) {
  if (const std::optional<double> value = ParseFiniteDouble(text)) return *value;
  return Status::InvalidArgument(where + ": `" + text + "` is not a non-negative number");
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Job specs.

Result<wire::JobSpec> SpecFromFlags(const SubmitOptions& o) {
  wire::JobSpec spec;
  if (o.command.empty()) {
    return Status::InvalidArgument("no command: put the program after `--`, e.g. "
                                   "`gavel submit --steps 100 -- python3 train.py`");
  }
  for (const std::string& arg : o.command) spec.add_command(arg);
  if (o.steps == 0) return Status::InvalidArgument("--steps: must be at least 1");
  spec.set_total_steps(o.steps);
  spec.set_scale_factor(o.scale_factor);
  spec.set_job_type(o.job_type);
  spec.set_priority_weight(o.priority_weight);
  spec.set_entity(o.entity);
  spec.set_name(o.name);
  spec.set_working_directory(o.working_directory);
  spec.set_app(o.app);
  spec.set_cpus_per_gpu(o.cpus_per_gpu);
  spec.set_mem_gb_per_gpu(o.mem_gb_per_gpu);
  if (!o.utility.empty()) GAVEL_RETURN_IF_ERROR(SetSpecUtility(o.utility, "--utility", &spec));
  for (const std::string& t : o.throughputs) {
    GAVEL_ASSIGN_OR_RETURN(auto pair, SplitPair(t, "--throughput"));
    GAVEL_ASSIGN_OR_RETURN(const double rate, ParseRate(pair.second, "--throughput " + t));
    (*spec.mutable_throughputs())[pair.first] = rate;
  }
  for (const std::string& e : o.env) {
    GAVEL_ASSIGN_OR_RETURN(auto pair, SplitPair(e, "--env"));
    (*spec.mutable_env())[pair.first] = pair.second;
  }
  // Named as the flags (whose validators already refused what the command line can hold).
  GAVEL_RETURN_IF_ERROR(CheckSpecBounds(spec, [](const std::string& field) -> std::string {
    if (field.starts_with("throughputs.")) return "--throughput " + field.substr(12) + "=";
    if (field == "scale_factor") return "--scale-factor";
    if (field == "priority_weight") return "--priority-weight";
    if (field == "cpus_per_gpu") return "--cpus-per-gpu";
    if (field == "mem_gb_per_gpu") return "--mem-gb-per-gpu";
    return "--" + field;
  }));
  return spec;
}

// ------------------------------------------------------------------------------------------
// Commands.

Status RunSubmit(const ClientOptions& client, const SubmitOptions& o, std::ostream& out) {
  std::vector<wire::JobSpec> specs;
  if (!o.job_file.empty()) {
    if (!o.command.empty()) {
      return Status::InvalidArgument("--job-file: give either a job file or a command, not both");
    }
    std::ifstream in(o.job_file);
    if (!in) return Status::IoError("--job-file: cannot read " + o.job_file);
    std::stringstream text;
    text << in.rdbuf();
    GAVEL_ASSIGN_OR_RETURN(specs, ParseJobFile(text.str(), o.job_file));
  } else {
    GAVEL_ASSIGN_OR_RETURN(wire::JobSpec spec, SpecFromFlags(o));
    specs.push_back(std::move(spec));
  }
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(client));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::SubmitJobRequest request;
    *request.mutable_spec() = specs[i];
    wire::SubmitJobResponse response;
    const grpc::Status status = c.stub->SubmitJob(&context, request, &response);
    if (!status.ok()) {
      return rpc::FromGrpc(status, specs.size() > 1 ? "job " + std::to_string(i) : "submit");
    }
    out << response.job_id() << "\n";
  }
  return Status::Ok();
}

std::string JobStateName(wire::JobState state) {
  switch (state) {
    case wire::QUEUED: return "queued";
    case wire::RUNNING: return "running";
    case wire::DONE: return "done";
    case wire::FAILED: return "failed";
    case wire::CANCELLED: return "cancelled";
    default: break;
  }
  return "unknown";
}

std::string JobsJson(const wire::ListJobsResponse& jobs) {
  json list = json::array();
  for (const wire::JobInfo& job : jobs.jobs()) {
    json allocation = json::object();
    json seconds = json::object();
    json steps = json::object();
    json estimate = json::object();
    json measured = json::object();
    json prior = json::object();
    for (const wire::JobTypeStats& t : job.per_type()) {
      allocation[t.gpu_type()] = t.allocation();
      seconds[t.gpu_type()] = t.seconds();
      steps[t.gpu_type()] = t.steps();
      estimate[t.gpu_type()] = t.throughput_estimate();
      measured[t.gpu_type()] = t.measurements() > 0 ? json(t.throughput_measured()) : json();
      prior[t.gpu_type()] = t.throughput_prior();
    }
    json command = json::array();
    for (const std::string& arg : job.spec().command()) command.push_back(arg);
    json workers = json::array();
    for (std::uint64_t w : job.worker_ids()) workers.push_back(w);
    list.push_back({
        {"id", job.id()},
        {"name", job.name()},
        {"user", job.user()},
        {"state", JobStateName(job.state())},
        {"steps_done", job.steps_done()},
        {"total_steps", job.total_steps()},
        {"progress", job.progress()},
        {"job_type", job.spec().job_type()},
        {"scale_factor", job.spec().scale_factor()},
        {"priority_weight", job.spec().priority_weight()},
        {"entity", job.spec().entity()},
        {"command", command},
        {"allocation", allocation},
        {"time_on_type_s", seconds},
        {"steps_on_type", steps},
        {"throughput_estimate", estimate},
        {"throughput_measured", measured},
        {"throughput_prior", prior},
        {"gpu_type", job.gpu_type()},
        {"worker_ids", workers},
        {"eta_s", job.eta_s() < 0.0 ? json() : json(job.eta_s())},
        {"attempts", job.attempts()},
        {"startup_s", job.last_startup_s()},
        {"startup_total_s", job.startup_total_s()},
        {"sharing", job.sharing()},
        {"partner_job_id", job.partner_job_id() == 0 ? json() : json(job.partner_job_id())},
        {"partner_job_type", job.partner_job_type()},
        {"colocated_steps_per_s",
         job.colocated_measurements() > 0 ? json(job.colocated_steps_per_s()) : json()},
        {"failures", job.failures()},
        {"last_exit_code", job.last_exit_code()},
        {"message", job.message()},
        {"submitted_unix_ms", job.submitted_unix_ms()},
        {"finished_unix_ms", job.finished_unix_ms() == 0 ? json() : json(job.finished_unix_ms())},
    });
  }
  return list.dump(2);
}

void PrintJobsTable(const wire::ListJobsResponse& jobs, std::int64_t now_ms, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::JobInfo& job : jobs.jobs()) {
    std::string alloc;
    for (const wire::JobTypeStats& t : job.per_type()) {
      if (t.allocation() <= 0.0005) continue;
      alloc += (alloc.empty() ? "" : ",") + t.gpu_type() + ":" + Fixed(t.allocation(), 2);
    }
    std::string where = "-";
    if (job.state() == wire::RUNNING && job.worker_ids_size() > 0) {
      where = job.gpu_type() + "/" + std::to_string(job.worker_ids(0));
      if (job.worker_ids_size() > 1) where += "+" + std::to_string(job.worker_ids_size() - 1);
    }
    // Space sharing: the job next to it on the same GPU(s), and its own measured steps/s
    // next to a job of that type (or the last partner's, while it runs alone).
    std::string shared = "-";
    if (job.partner_job_id() != 0) {
      shared = (job.sharing() ? "with " : "last ") + std::to_string(job.partner_job_id());
      if (job.colocated_measurements() > 0) {
        shared += " @" + Fixed(job.colocated_steps_per_s(), 2) + "/s";
      }
    }
    const bool active = job.state() == wire::QUEUED || job.state() == wire::RUNNING;
    rows.push_back({std::to_string(job.id()),
                    job.name().empty() ? "-" : job.name(),
                    job.user(),
                    JobStateName(job.state()),
                    std::to_string(job.steps_done()) + "/" + std::to_string(job.total_steps()),
                    Fixed(100.0 * job.progress(), 1) + "%",
                    where,
                    shared,
                    alloc.empty() ? "-" : alloc,
                    active ? Duration(job.eta_s()) : "-",
                    job.attempts() == 0 ? "-" : Fixed(job.last_startup_s(), 1) + "s",
                    Duration(static_cast<double>(now_ms - job.submitted_unix_ms()) / 1000.0),
                    job.message().empty() ? "" : job.message().substr(0, 60)});
  }
  PrintTable({"ID", "NAME", "USER", "STATE", "STEPS", "PROGRESS", "GPU", "SHARED", "ALLOCATION",
              "ETA", "STARTUP", "AGE", "MESSAGE"},
             rows, out);
}

JobsView ViewOf(bool all, const std::vector<std::uint64_t>& ids) {
  return all || !ids.empty() ? JobsView::kAll : JobsView::kActive;
}

Status RunJobs(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
               JobsView view, const std::string& output, std::ostream& out) {
  return RunJobs(client, ids, view, JobsPaging{}, output, out);
}

Status RunJobs(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
               JobsView view, const JobsPaging& paging, const std::string& output,
               std::ostream& out) {
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(client));
  wire::ListJobsRequest request;
  for (std::uint64_t id : ids) request.add_job_ids(id);
  request.set_active_only(view == JobsView::kActive);
  // Gathering every page: the largest page the protocol allows (scheduler.proto,
  // ListJobsRequest.limit), so 5,000 jobs are 5 calls rather than 50.
  constexpr std::uint32_t kLargestPage = 1000;
  request.set_limit(paging.limit.value_or(kLargestPage));
  request.set_page_token(paging.page_token);
  // Each response is one bounded page; without --limit the pages are gathered here.
  wire::ListJobsResponse response;
  while (true) {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::ListJobsResponse page;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(c.stub->ListJobs(&context, request, &page), "jobs"));
    for (wire::JobInfo& job : *page.mutable_jobs()) *response.add_jobs() = std::move(job);
    if (page.next_page_token().empty()) break;
    if (paging.limit) {
      std::cerr << "gavel jobs: more jobs follow: --page-token " << page.next_page_token()
                << "\n";
      break;
    }
    request.set_page_token(page.next_page_token());
  }
  if (output == "json") {
    out << JobsJson(response) << "\n";
  } else {
    PrintJobsTable(response, NowMs(), out);
  }
  return Status::Ok();
}

Status RunCancel(const ClientOptions& client, const std::vector<std::uint64_t>& ids,
                 std::ostream& out) {
  if (ids.empty()) return Status::InvalidArgument("cancel: name at least one job id");
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(client));
  for (std::uint64_t id : ids) {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::CancelJobRequest request;
    request.set_job_id(id);
    wire::CancelJobResponse response;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(c.stub->CancelJob(&context, request, &response),
                                        "cancel job " + std::to_string(id)));
    out << "job " << id << " cancelled at " << response.job().steps_done() << "/"
        << response.job().total_steps() << " steps\n";
  }
  return Status::Ok();
}

Status RunWorkers(const ClientOptions& client, const std::string& output, std::ostream& out) {
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(client));
  grpc::ClientContext context;
  c.Prepare(&context);
  wire::ListWorkersResponse response;
  GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(
      c.stub->ListWorkers(&context, wire::ListWorkersRequest(), &response), "workers"));
  if (output == "json") {
    json list = json::array();
    for (const wire::WorkerInfo& w : response.workers()) {
      list.push_back({{"worker_id", w.worker_id()},
                      {"agent_id", w.agent_id()},
                      {"gpu_type", w.gpu_type()},
                      {"address", w.address()},
                      {"alive", w.alive()},
                      {"busy", w.busy()},
                      {"job_id", w.busy() ? json(w.job_id()) : json()},
                      {"last_heartbeat_age_s", w.last_heartbeat_age_s()},
                      {"busy_seconds", w.busy_seconds()},
                      {"registered_unix_ms", w.registered_unix_ms()}});
    }
    out << list.dump(2) << "\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows;
  for (const wire::WorkerInfo& w : response.workers()) {
    rows.push_back({std::to_string(w.worker_id()), w.gpu_type(), w.alive() ? "alive" : "dead",
                    w.busy() ? std::to_string(w.job_id()) : "-", w.agent_id(), w.address(),
                    Duration(w.last_heartbeat_age_s()) + " ago", Duration(w.busy_seconds())});
  }
  PrintTable({"WORKER", "TYPE", "STATE", "JOB", "AGENT", "ADDRESS", "HEARTBEAT", "BUSY"}, rows,
             out);
  return Status::Ok();
}

Status RunStatus(const ClientOptions& client, const std::string& output, std::ostream& out) {
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(client));
  grpc::ClientContext context;
  c.Prepare(&context);
  wire::GetStatusResponse s;
  GAVEL_RETURN_IF_ERROR(
      rpc::FromGrpc(c.stub->GetStatus(&context, wire::GetStatusRequest(), &s), "status"));
  json gpus = json::object();
  for (const auto& [type, count] : s.gpus_per_type()) gpus[type] = count;
  json weights = json::object();
  for (const auto& [entity, weight] : s.entity_weights()) weights[entity] = weight;
  if (output == "json") {
    out << json{{"policy", s.policy()},
                {"round_duration_s", s.round_duration_s()},
                {"round_id", s.round_id()},
                {"round_elapsed_s", s.round_elapsed_s()},
                {"jobs", {{"queued", s.queued_jobs()},
                          {"running", s.running_jobs()},
                          {"done", s.done_jobs()},
                          {"failed", s.failed_jobs()},
                          {"cancelled", s.cancelled_jobs()}}},
                {"workers", {{"alive", s.alive_workers()}, {"dead", s.dead_workers()}}},
                {"gpus_per_type", gpus},
                {"entity_weights", weights},
                {"lag_bound_restarts", s.lag_bound_restarts()},
                {"rounds_on_time", s.rounds_on_time()},
                {"arrival_settle_s", s.arrival_settle_s()},
                {"uptime_s", s.uptime_s()},
                {"last_solve_s", s.last_solve_s()},
                {"allocations_computed", s.allocations_computed()},
                {"version", s.version()}}
                .dump(2)
        << "\n";
    return Status::Ok();
  }
  std::string types;
  for (const auto& [type, count] : s.gpus_per_type()) {
    types += (types.empty() ? "" : ", ") + type + ":" + std::to_string(count);
  }
  out << "policy:      " << EscapeForDisplay(s.policy()) << "\n"
      << "round:       " << s.round_id() << " (" << Duration(s.round_elapsed_s()) << " of "
      << Duration(s.round_duration_s()) << ")\n"
      << "jobs:        " << s.queued_jobs() << " queued, " << s.running_jobs() << " running, "
      << s.done_jobs() << " done, " << s.failed_jobs() << " failed, " << s.cancelled_jobs()
      << " cancelled\n"
      << "workers:     " << s.alive_workers() << " alive ("
      << (types.empty() ? "-" : EscapeForDisplay(types))
      << "), " << s.dead_workers() << " dead\n"
      << "last solve:  " << Fixed(s.last_solve_s(), 3) << " s (" << s.allocations_computed()
      << " solves)\n";
  // Sorted by name (a protobuf map has no order).
  const std::map<std::string, double> sorted(s.entity_weights().begin(), s.entity_weights().end());
  std::string entities;
  for (const auto& [entity, weight] : sorted) {
    entities += (entities.empty() ? "" : ", ") + entity + "=" + Fixed(weight, 3);
  }
  out << "entities:    " << (entities.empty() ? "all weigh 1" : entities + " (others weigh 1)")
      << "\n"
      << "uptime:      " << Duration(s.uptime_s()) << "\n";
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// CLI glue.

void AddClientCommands(CLI::App& app, ClientCommandOptions* o) {
  auto common = [o](CLI::App* cmd) {
    cmd->add_option("--scheduler", o->client.scheduler,
                    "Scheduler address (default 127.0.0.1:50060)");
    cmd->add_option("--token-file", o->client.token_file, "File holding your token");
    cmd->add_option("--tls-ca", o->client.tls_ca,
                    "PEM CA of a scheduler that serves TLS (gavel serve --tls-cert)");
    cmd->add_option("--timeout-seconds", o->client.timeout_seconds,
                    "Give up after this long (default 30)")
        ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxSeconds, " s"));
  };
  SubmitOptions& s = o->submit;
  o->submit_cmd = app.add_subcommand("submit", "Submit a job to a running `gavel serve`");
  common(o->submit_cmd);
  o->submit_cmd->add_option("--steps", s.steps, "Total training steps")
      ->check(BoundedInteger(1, static_cast<std::uint64_t>(bounds::kMaxSteps)));
  o->submit_cmd->add_option("--scale-factor", s.scale_factor, "GPUs at once (default 1)")
      ->check(BoundedInteger(1, bounds::kMaxGpus));
  o->submit_cmd->add_option("--job-type", s.job_type,
                            "Throughput-table model (default \"ResNet-18 (batch size 64)\")");
  o->submit_cmd->add_option("--priority-weight", s.priority_weight, "Weight (default 1)")
      ->check(Bounded(bounds::kMinWeight, bounds::kMaxWeight));
  o->submit_cmd->add_option("--entity", s.entity, "Owner group (default: your user)");
  // One value per occurrence: CLI11 lets a list option swallow a following `--` as the end of
  // its list, which then left `-- python3 train.py --lr 0.1` parsed as options.
  o->submit_cmd
      ->add_option("--throughput", s.throughputs,
                   "TYPE=STEPS_PER_S estimate (repeatable); overrides the table")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  o->submit_cmd
      ->add_option("--env", s.env, "KEY=VALUE for the job's environment (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  o->submit_cmd->add_option("--name", s.name, "A label for `gavel jobs`");
  o->submit_cmd->add_option("--working-directory", s.working_directory,
                            "Working directory on the worker host");
  o->submit_cmd->add_option("--app", s.app,
                            "Themis app: your jobs with the same app name bid as one");
  o->submit_cmd->add_option("--utility", s.utility,
                            "Utility of completion time (oasis): sigmoid:VALUE:MIDPOINT_S:STEEPNESS "
                            "or linear:VALUE:ZERO_AT_S");
  o->submit_cmd->add_option("--cpus-per-gpu", s.cpus_per_gpu,
                            "Host CPU cores per GPU (drf, tetris; default 0 = none)")
      ->check(Bounded(0.0, bounds::kMaxHostCpus));
  o->submit_cmd->add_option("--mem-gb-per-gpu", s.mem_gb_per_gpu,
                            "GB of host memory per GPU (drf, tetris; default 0 = none)")
      ->check(Bounded(0.0, bounds::kMaxHostMemGb, " GB"));
  o->submit_cmd->add_option("--job-file", s.job_file,
                            "JSON job file (an object or a list) instead of flags");
  o->submit_cmd->add_option("command", s.command, "The program and its arguments, after --");

  o->jobs_cmd = app.add_subcommand(
      "jobs", "List the queued and running jobs (--all: finished ones too; ids: those jobs)");
  common(o->jobs_cmd);
  o->jobs_cmd->add_option("-o,--output", o->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  CLI::Option* all =
      o->jobs_cmd->add_flag("-a,--all", o->all_jobs, "Every job, done, failed and cancelled too");
  o->jobs_cmd
      ->add_flag("--active")
      ->description("Only queued and running jobs (the default)")
      ->excludes(all);
  o->jobs_cmd->add_option("job_ids", o->job_ids, "Only these jobs, whatever their state");
  o->jobs_cmd
      ->add_option("--limit", o->paging.limit,
                   "One page of at most N jobs (1..1000); the next page's token goes to stderr")
      ->check(BoundedInteger(1, 1000));
  o->jobs_cmd->add_option("--page-token", o->paging.page_token,
                          "Start after the page that printed this token");

  o->cancel_cmd = app.add_subcommand("cancel", "Cancel jobs (your own, or any as an admin)");
  common(o->cancel_cmd);
  o->cancel_cmd->add_option("job_ids", o->job_ids, "Job ids")->required();

  o->workers_cmd = app.add_subcommand("workers", "List the GPUs (workers) the scheduler knows");
  common(o->workers_cmd);
  o->workers_cmd->add_option("-o,--output", o->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));

  o->status_cmd = app.add_subcommand("status", "Show the scheduler's state");
  common(o->status_cmd);
  o->status_cmd->add_option("-o,--output", o->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
}

std::optional<int> RunClientCommands(const ClientCommandOptions& o) {
  Status status;
  const char* name = nullptr;
  if (o.submit_cmd && o.submit_cmd->parsed()) {
    name = "submit";
    status = RunSubmit(o.client, o.submit, std::cout);
  } else if (o.jobs_cmd && o.jobs_cmd->parsed()) {
    name = "jobs";
    status = RunJobs(o.client, o.job_ids, ViewOf(o.all_jobs, o.job_ids), o.paging, o.output,
                     std::cout);
  } else if (o.cancel_cmd && o.cancel_cmd->parsed()) {
    name = "cancel";
    status = RunCancel(o.client, o.job_ids, std::cout);
  } else if (o.workers_cmd && o.workers_cmd->parsed()) {
    name = "workers";
    status = RunWorkers(o.client, o.output, std::cout);
  } else if (o.status_cmd && o.status_cmd->parsed()) {
    name = "status";
    status = RunStatus(o.client, o.output, std::cout);
  } else {
    return std::nullopt;
  }
  if (!status.ok()) {
    std::cerr << "gavel " << name << ": " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
