# Sourced by the Slurm script tests: skip (exit 77) without root, slurm-wlm and munge; else
# make the test's directory: slurm_test_dir NAME sets $dir.
slurm_test_dir() {
  if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "skipped: needs root, slurm-wlm and munge"
    exit 77
  fi
  dir=$(mktemp -d "/tmp/gavel_slurm_$1_XXXXXX")
}
