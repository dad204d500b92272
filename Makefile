# The README's commands. Each target installs what it needs first (scripts/install-deps.sh).
.PHONY: deps build run test test-release test-debug test-tsa bench clean

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

# Every test: the optimised build, then the unit tests again under ASan and UBSan, and the
# mutex annotations checked by clang (-Wthread-safety; a compile of the libraries with mutexes).
test: test-release test-debug test-tsa

test-release: build
	@ctest --preset release

test-debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)
	@ctest --preset debug -LE slow

test-tsa: deps
	@cmake --preset tsa >/dev/null
	@cmake --build --preset tsa -j $(JOBS)

bench: build
	@bench/run.sh

clean:
	rm -rf build
