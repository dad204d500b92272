#include "gavel/workload/job_table.h"

#include <string>
#include <vector>

namespace gavel::workload {
namespace {

std::vector<JobTemplate> BuildJobTable() {
  std::vector<JobTemplate> table;
  table.reserve(26);
  auto batched = [](const std::string& model, int batch_size) {
    return model + " (batch size " + std::to_string(batch_size) + ")";
  };
  for (int b : {16, 32, 64, 128, 256}) {
    table.push_back({batched("ResNet-18", b),
                     "python3 main.py --data_dir=%s/cifar10 --batch_size " + std::to_string(b),
                     "image_classification/cifar10", "--num_steps", true, true});
  }
  for (int b : {16, 32, 64, 128}) {
    table.push_back({batched("ResNet-50", b),
                     "python3 main.py -j 8 -a resnet50 -b " + std::to_string(b) + " %s/imagenet/",
                     "image_classification/imagenet", "--num_minibatches", true, true});
  }
  for (int b : {16, 32, 64, 128, 256}) {
    table.push_back({batched("Transformer", b),
                     "python3 train.py -data %s/translation/multi30k.atok.low.pt -batch_size " +
                         std::to_string(b) + " -proj_share_weight",
                     "translation", "-step", true, true});
  }
  for (int b : {5, 10, 20, 40, 80}) {
    table.push_back({batched("LM", b),
                     "python main.py --cuda --data %s/wikitext2 --batch_size " + std::to_string(b),
                     "language_modeling", "--steps", true, true});
  }
  for (int b : {512, 1024, 2048, 4096, 8192}) {
    table.push_back(
        {batched("Recommendation", b),
         "python3 train.py --data_dir %s/ml-20m/pro_sg/ --batch_size " + std::to_string(b),
         "recommendation", "-n", true, false});
  }
  table.push_back({"A3C", "python3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True",
                   "rl", "--max-steps", false, false});
  table.push_back({"CycleGAN", "python3 cyclegan.py --dataset_path %s/monet2photo --decay_epoch 0",
                   "cyclegan", "--n_steps", true, false});
  return table;
}

}  // namespace

std::span<const JobTemplate> JobTable() {
  static const std::vector<JobTemplate>* const kTable =
      new std::vector<JobTemplate>(BuildJobTable());
  return *kTable;
}

TraceJob TraceJobFromTemplate(const JobTemplate& t, int scale_factor) {
  TraceJob job;
  job.job_type = t.model;
  job.command = t.command;
  job.working_directory = t.working_directory;
  job.num_steps_arg = t.num_steps_arg;
  job.needs_data_dir = t.needs_data_dir;
  job.scale_factor = scale_factor;
  return job;
}

}  // namespace gavel::workload
