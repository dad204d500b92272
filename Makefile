# The README's commands. Each target installs what it needs first (scripts/install-deps.sh).
# `make install`: the `gavel` binary, the C++ iterator header and the Python iterator client
# (importable as `gavel_iterator` by Debian's python3) under PREFIX (cmake/GavelInstall.cmake).
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

# Every test, from two builds, each making only the test binaries it runs: the optimised one
# (gcc) with the tests labelled slow, then the `debug` preset (clang++ -O1: ASan, UBSan,
# -Wthread-safety over every target, and the libFuzzer targets built in the same tree) with all
# the others, then a short run of every parser's fuzz target (docs/formats.md, "Fuzzing").
#
# CI time (.ci/run = make test on a fresh clone, no ccache, 2 cores): 1852 s with four builds
# (release, gcc debug, tsa, fuzz); 2228 s (stop 18) with two builds that both compiled every
# test, and apt's first install; 1774 s (stop 19) compiling each test once; 1979 s (stop 20)
# with the tests' own units at -O0 in the debug tree (the library stays -O1). Since then the
# debug tree's test units share one precompiled header (~40% of their compile time), the
# benchmarks are compiled there at -O0 instead of at -O3 in the release tree, the fuzz
# targets run JOBS at a time, and the debug tree compiles each library's units 8 to a unity
# batch (GAVEL_UNITY_BUILD) and the generated protobuf/gRPC code at -O0 without the
# sanitizers' instrumentation (GAVEL_GENERATED_CODE_FLAGS): 689 -> 491 CPU-s for the library
# units, 60 -> 16 for the generated ones (~2 min of CI's 2-core wall time). bench/README.md, "CI time", has what was measured per unit
# (scripts/unit-cpu-time.sh) and the command to time each phase again (scripts/ci-time.sh).
test: test-release test-debug test-fuzz

# The optimised build compiles the product and only the slow tests (whole simulations against
# the reference runs, the runtime's end to end tests with real processes): every other test
# runs in the sanitizer build below, so compiling it twice bought nothing but CI time
# (GAVEL_UNIT_TESTS_IN_ALL, cmake/GavelHelpers.cmake); the benchmarks, which nothing here
# runs, are compiled and linked there too, at -O0 (GAVEL_BENCHMARKS_IN_ALL).
test-release: deps
	@cmake --preset release -DGAVEL_UNIT_TESTS_IN_ALL=OFF -DGAVEL_BENCHMARKS_IN_ALL=OFF >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@ctest --preset release -L slow

test-debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)
	@ctest --preset debug

# JOBS targets at a time (each libFuzzer process uses one core).
# 5 s per target, on the fuzz targets test-debug built (scripts/fuzz-smoke.sh only checks
# they are up to date). fuzz-smoke.sh's libFuzzer runs start from every corpus file, and
# `ctest --preset debug` replays each corpus once as well (fuzz_corpus_<name>).
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
