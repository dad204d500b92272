# Helper functions that declare every library, test and benchmark, so the dependency graph
# is written down in one place per folder.

function(gavel_apply_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
  if(GAVEL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(GAVEL_THREAD_SAFETY)
    # core/mutex.h's annotations: what each mutex guards, checked at compile time.
    target_compile_options(${target} PRIVATE -Wthread-safety -Wthread-safety-beta)
  endif()
endfunction()

# gavel_library(NAME <target> SRCS <files...> DEPS <targets...> [PRIVATE_DEPS <targets...>])
function(gavel_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC "${PROJECT_SOURCE_DIR}/src")
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  gavel_apply_warnings(${ARG_NAME})
  if(GAVEL_UNITY_BUILD)
    # The debug preset: a library's units compiled 8 to a batch (CMake's unity build), since
    # each unit there parses the same standard, JSON and gRPC headers again and the build is
    # CI's largest share (bench/README.md, "CI time"). The optimised build compiles each unit
    # alone, so a unit that leans on another's #include or file-local name still fails there.
    # Within a batch the anonymous namespaces are one: a file-local name defined in two units
    # of a library fails to compile (or, -Wshadow, to be shadowed), and an overload is worse,
    # since it compiles and can take the other unit's calls (the generator's Trim(string)
    # took trace_importers' Trim(string_view) calls and left views of temporaries): give
    # file-local helpers names of their own, or share one from a header.
    set_target_properties(${ARG_NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# gavel_test_unit_flags(<target>): the compile flags of a test binary's own units, shared by
# every test and by gavel_test_pch (clang refuses a precompiled header made with other
# optimisation, sanitizer or warning flags than the unit's).
# 1. No libFuzzer coverage instrumentation in the test's own units (GAVEL_FUZZ): no fuzz target
#    links them, and the per-comparison callbacks cost a sixth of their compile time.
# 2. GAVEL_TEST_UNIT_FLAGS after the build type's flags: the debug preset compiles the tests'
#    own units at -O0 (the library they test stays at -O1). Their time is the sanitizer
#    build's largest share, and mostly the optimiser's: policy_properties_test.cc, clang 14
#    with ASan+UBSan, 22.7 CPU-s at -O1, 9.7 at -O0, 5.4 in the front end alone; the tests'
#    run time is the library's.
function(gavel_test_unit_flags target)
  if(GAVEL_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=fuzzer-no-link)
  endif()
  if(GAVEL_TEST_UNIT_FLAGS)
    separate_arguments(flags UNIX_COMMAND "${GAVEL_TEST_UNIT_FLAGS}")
    target_compile_options(${target} PRIVATE ${flags})
  endif()
  if(GAVEL_TEST_PCH)
    # The runtime's tests get -pthread from gRPC, the others not, and clang refuses a
    # precompiled header made with the other setting: every test unit gets it.
    target_compile_options(${target} PRIVATE -pthread)
  endif()
endfunction()

# gavel_test_pch_target(): with GAVEL_TEST_PCH (the debug preset), the target whose
# precompiled header every test unit reuses: GoogleTest, GoogleMock, nlohmann/json and the
# standard headers the tests include most. At -O0 a test unit's time is mostly the front end,
# and most of that is these headers (policy_properties_test.cc: 4.8 of its ~10 CPU-s), parsed
# and instantiated once here instead of in each of ~70 units (bench/README.md, "CI time").
# Only external headers, never ours: a header a unit did not ask for can hide a missing
# #include, and the optimised build, which compiles every test without it (`make build`),
# still catches those. Call once, after GTest and nlohmann_json are found.
function(gavel_test_pch_target)
  if(NOT GAVEL_TEST_PCH)
    return()
  endif()
  add_library(gavel_test_pch OBJECT "${PROJECT_SOURCE_DIR}/cmake/test_pch.cc")
  target_link_libraries(gavel_test_pch PRIVATE GTest::gtest GTest::gmock
    nlohmann_json::nlohmann_json)
  gavel_test_unit_flags(gavel_test_pch)
  gavel_apply_warnings(gavel_test_pch)
  target_precompile_headers(gavel_test_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp>
    <algorithm> <chrono> <cmath> <cstdint> <cstdlib> <filesystem> <fstream> <functional>
    <limits> <map> <memory> <optional> <random> <set> <sstream> <string> <thread> <tuple>
    <utility> <vector>)
endfunction()

# gavel_test_binary(<target> <labels>): what every test binary gets, however it is declared.
# 1. Its place in the default build (`make test` builds each tree only for the tests it runs;
#    see the Makefile): with GAVEL_UNIT_TESTS_IN_ALL off (the optimised build) a binary without
#    the `slow` label is left out, since the unit tests run in the sanitizer build; with
#    GAVEL_SLOW_TESTS_IN_ALL off (the sanitizer build) a `slow` one is left out, since only the
#    optimised build runs those. A binary declared without this call stays in the default
#    build, so forgetting the call costs build time but never skips a test.
# 2. The test units' flags (gavel_test_unit_flags), the warnings among them.
# 3. With GAVEL_TEST_PCH, the shared precompiled header (gavel_test_pch_target).
function(gavel_test_binary target labels)
  if("slow" IN_LIST labels)
    set(in_all ${GAVEL_SLOW_TESTS_IN_ALL})
  else()
    set(in_all ${GAVEL_UNIT_TESTS_IN_ALL})
  endif()
  if(NOT in_all)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
  gavel_test_unit_flags(${target})
  if(GAVEL_TEST_PCH)
    target_precompile_headers(${target} REUSE_FROM gavel_test_pch)
  endif()
endfunction()

# gavel_test(NAME <target> SRCS <files...> DEPS <targets...> [LABELS <labels...>])
# Every test binary gets GoogleTest, GoogleMock and RapidCheck, and knows the source tree.
# LABELS go on every test in the binary; `tsan` also adds the binary to the tsan_tests target
# (the `tsan` preset builds that target and runs the tests labelled tsan).
function(gavel_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  gavel_test_binary(${ARG_NAME} "${ARG_LABELS}")
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
    rapidcheck)
  target_include_directories(${ARG_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/src")
  target_compile_definitions(${ARG_NAME} PRIVATE GAVEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gavel_apply_warnings(${ARG_NAME})
  set(properties TIMEOUT 600)
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
  if("tsan" IN_LIST ARG_LABELS)
    add_dependencies(tsan_tests ${ARG_NAME})
  endif()
endfunction()

# gavel_benchmark(NAME <target> SRCS <files...> DEPS <targets...>)
# `make test` compiles and links the benchmarks only in the sanitizer build, so that they cannot
# rot unnoticed, with the test units' cheaper flags (gavel_test_unit_flags: -O0 there; none in
# the optimised build, whose benchmarks are the ones bench/run.sh runs). Its optimised build
# leaves them out of the default build (GAVEL_BENCHMARKS_IN_ALL off): nothing there runs them.
function(gavel_benchmark)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  if(NOT GAVEL_BENCHMARKS_IN_ALL)
    set_target_properties(${ARG_NAME} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
  gavel_test_unit_flags(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  target_compile_definitions(${ARG_NAME} PRIVATE GAVEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gavel_apply_warnings(${ARG_NAME})
endfunction()
