// scale_job: the training program of the runtime-at-scale harness (runtime_scale.cc): a job
// that trains nothing. Each step sleeps STEP_SECONDS (argv[1], default 0.05); the lease
// protocol, checkpoints and reports are the real ones (gavel_iterator.h), so the agent and the
// daemon see what a training job shows them, at the cost of a sleeping process (about 1 MB).
//
// Checkpoint: <dir>/model.json = {"step": N}, N the steps done when it was saved; a restore
// refuses one that disagrees with the iterator's own count (a lost or doubled step).
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gavel/iterator/gavel_iterator.h"

int main(int argc, char** argv) {
  const double step_seconds = argc > 1 ? std::strtod(argv[1], nullptr) : 0.05;
  if (!(step_seconds > 0.0 && step_seconds < 3600.0)) {
    std::cerr << "scale_job: STEP_SECONDS must be in (0, 3600), got " << (argc > 1 ? argv[1] : "")
              << "\n";
    return 2;
  }
  try {
    std::uint64_t restored = 0;
    gavel::iterator::GavelIterator::Options options;
    // Thousands of jobs report to a few agent processes: every few seconds is plenty.
    options.progress_interval_s = 10.0;
    gavel::iterator::GavelIterator* self = nullptr;
    gavel::iterator::GavelIterator it(
        [&](const std::string& dir) {
          std::ofstream(dir + "/model.json") << nlohmann::json{{"step", self->steps_done()}} << "\n";
        },
        [&](const std::string& dir) {
          const auto state = nlohmann::json::parse(std::ifstream(dir + "/model.json"));
          restored = state.at("step").get<std::uint64_t>();
        },
        options);
    self = &it;
    if (restored != it.steps_done()) {
      std::cerr << "scale_job: checkpoint holds step " << restored << " but the iterator counts "
                << it.steps_done() << "\n";
      return 3;
    }
    const auto step = std::chrono::duration<double>(step_seconds);
    while (it.Next()) std::this_thread::sleep_for(step);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "scale_job: " << error.what() << "\n";
    return 1;
  }
}
