# The README's commands. Each target installs what it needs first (scripts/install-deps.sh).
.PHONY: deps build run test test-release test-debug test-tsa test-fuzz fuzz test-tsan bench clean

JOBS ?= $(shell nproc)

deps:
	@scripts/install-deps.sh

build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

# The main job: simulate the paper's 36:36:36 cluster at 2 jobs/hour under max_min_fairness vs
# max_min_fairness_perf and fifo vs fifo_perf; prints the JCT table and writes
# build/headline/report.html (scripts/headline.sh).
run: build
	@scripts/headline.sh

# Every test: the optimised build, then the unit tests again under ASan and UBSan, the mutex
# annotations checked by clang (-Wthread-safety), and a short run of every parser's fuzz
# target (docs/formats.md, "Fuzzing").
test: test-release test-debug test-tsa test-fuzz

test-release: build
	@ctest --preset release

test-debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)
	@ctest --preset debug -LE slow

# The fuzz build and 5 s per target. Measured in a fresh clone without ccache on the 2-core
# machine, `time scripts/fuzz-smoke.sh` (20 s per target) took 592 s: ~430 s to build the
# `fuzz` preset, 160 s of runs; at 5 s per target this is about 8 minutes, so that `make test`
# stays well inside CI's 30 (`make fuzz` runs longer). fuzz-smoke.sh's libFuzzer runs start
# from every corpus file, so `ctest --preset fuzz` (the same files, run once) would only
# repeat them.
test-fuzz: deps
	@FUZZ_SECONDS=5 scripts/fuzz-smoke.sh

# Longer fuzzing: FUZZ_SECONDS per target (default 20 here; e.g. make fuzz FUZZ_SECONDS=600).
FUZZ_SECONDS ?= 20
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz-smoke.sh

# The runtime's tests under ThreadSanitizer (not part of `test`: see docs/runtime.md, "Tests").
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	@ctest --preset tsan
test-tsa: deps
	@cmake --preset tsa >/dev/null
	@cmake --build --preset tsa -j $(JOBS)

bench: build
	@bench/run.sh

clean:
	rm -rf build
