// Job specs for `gavel submit`, from a JSON job file or already built from flags: the parser
// and the bounds every spec is held to (docs/formats.md, "Bounds"). Its own small library
// (core, proto, JSON) so that the job_file fuzz target links it without the client commands'
// gRPC stubs and CLI11. Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::cli {

// Job specs from a job file's JSON text: an object, a list of objects, or {"jobs": [...]}.
// Errors name the job's index and the field.
Result<std::vector<wire::JobSpec>> ParseJobFile(const std::string& text,
                                                const std::string& source_name);

// The one range check of a spec's numbers (docs/formats.md, "Bounds"), for job files and flags
// alike: InvalidArgument "<name(field)>: <value> is outside [lo, hi]" for the first number out
// of range. `name` turns a field ("steps", "scale_factor", "priority_weight",
// "throughputs.<type>") into what the user wrote: "jobs.json: job 3, field steps", "--steps".
using FieldNamer = std::function<std::string(const std::string& field)>;
Status CheckSpecBounds(const wire::JobSpec& spec, const FieldNamer& name);

// Sets spec.utility from the text form of traces (core/utility.h):
// "sigmoid:<value>:<midpoint s>:<steepness 1/s>" or "linear:<value>:<zero_at s>". Errors name
// the part at fault, after `where`.
Status SetSpecUtility(const std::string& text, const std::string& where, wire::JobSpec* spec);

}  // namespace gavel::cli
