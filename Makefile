# The README's commands. Each target installs what it needs first (scripts/install-deps.sh).
# `make install`: the `gavel` binaries (`gavel`, `gavel-engine`), the C++ iterator header and
# the Python iterator client (importable as `gavel_iterator` by Debian's python3) under PREFIX
# (cmake/GavelInstall.cmake).
.PHONY: deps build install run test test-release test-debug test-fuzz fuzz test-tsan bench clean

JOBS ?= $(shell nproc)

deps:
	@scripts/install-deps.sh

build: deps
	@cmake --preset release -DGAVEL_UNIT_TESTS_IN_ALL=ON -DGAVEL_BENCHMARKS_IN_ALL=ON >/dev/null
	@cmake --build --preset release -j $(JOBS)

PREFIX ?= /usr/local
install: build
	@cmake --install build/release --prefix $(PREFIX)

# The main job: simulate the paper's 36:36:36 cluster at 2 jobs/hour under max_min_fairness vs
# max_min_fairness_perf and fifo vs fifo_perf; prints the JCT table and writes
# build/headline/report.html (scripts/headline.sh). It builds only the simulator-only `gavel`
# (the `sim` preset: no runtime, tests or benchmarks) in build/sim.
run: deps
	@cmake --preset sim >/dev/null
	@cmake --build --preset sim -j $(JOBS)
	@GAVEL=build/sim/src/gavel/cli/gavel scripts/headline.sh

# Every test, in three steps that split the work so that each test is compiled once:
#  - test-release: the optimised gcc build of the product and of the tests labelled `slow`
#    (whole simulations against the reference runs, the runtime's end-to-end tests with real
#    processes), which need optimised code to finish in time; it runs only those.
#  - test-debug: the `debug` preset (clang++: ASan, UBSan, -Wthread-safety over every target,
#    the libFuzzer targets, the benchmarks compiled but not run) builds and runs every other
#    test, so the unit tests run under the sanitizers. It is tuned for compile time: the
#    tests' own units at -O0 sharing one precompiled header, each library's units in unity
#    batches of 8, the generated protobuf/gRPC code at -O0 without instrumentation
#    (CMakePresets.json, cmake/GavelHelpers.cmake).
#  - test-fuzz: a short run of every parser's fuzz target (docs/formats.md, "Fuzzing").
# How long this takes on CI's 2 cores, and how to time each step again (scripts/ci-time.sh):
# bench/README.md, "CI time".
test: test-release test-debug test-fuzz

# The product and the slow tests only (GAVEL_UNIT_TESTS_IN_ALL=OFF): every other test runs in
# the sanitizer build, and the benchmarks, which nothing here runs, are compiled there
# (GAVEL_BENCHMARKS_IN_ALL=OFF). `make build` still compiles everything optimised.
test-release: deps
	@cmake --preset release -DGAVEL_UNIT_TESTS_IN_ALL=OFF -DGAVEL_BENCHMARKS_IN_ALL=OFF >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@ctest --preset release -L slow

test-debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)
	@ctest --preset debug

# 5 s per target, JOBS targets at a time (each libFuzzer process uses one core), on the fuzz
# targets test-debug built (scripts/fuzz-smoke.sh only checks they are up to date). Each run
# starts from every corpus file; `ctest --preset debug` also replays each corpus once
# (fuzz_corpus_<name>).
test-fuzz: deps
	@JOBS=$(JOBS) FUZZ_SECONDS=5 scripts/fuzz-smoke.sh

# Longer fuzzing: FUZZ_SECONDS per target (default 20 here; e.g. make fuzz FUZZ_SECONDS=600).
FUZZ_SECONDS ?= 20
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz-smoke.sh

# The runtime's tests under ThreadSanitizer (not part of `test`: see docs/runtime.md, "Tests").
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	@ctest --preset tsan

bench: build
	@bench/run.sh

clean:
	rm -rf build
