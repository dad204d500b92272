// The original's job table (scheduler/job_table.py): the 26 job templates the workload generator
// draws from, in the original's order (order matters: the generator picks a template with
// random.choice over this list). Immutable static data; safe to share between threads.
#pragma once

#include <span>
#include <string>

#include "gavel/workload/trace_job.h"

namespace gavel::workload {

struct JobTemplate {
  std::string model;    // e.g. "ResNet-18 (batch size 64)"; the job-type key's model
  std::string command;  // shell command; keeps the literal "%s" data-dir placeholder
  std::string working_directory;
  std::string num_steps_arg;  // flag the runtime appends with the step count
  bool needs_data_dir = true;
  bool distributed = false;  // may run with scale factor > 1 (has (model, 2|4|8) throughputs)
};

// The 26 templates in the original's order: ResNet-18 x5, ResNet-50 x4, Transformer x5,
// LM x5, Recommendation x5, A3C, CycleGAN. The span refers to static storage.
std::span<const JobTemplate> JobTable();

// A job of template `t` at `scale_factor` GPUs: type, command, directory, step flag and
// data-dir flag from the template; steps, arrival and the rest left at their defaults.
TraceJob TraceJobFromTemplate(const JobTemplate& t, int scale_factor);

}  // namespace gavel::workload
