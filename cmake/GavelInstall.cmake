# `cmake --install build/release [--prefix P]` (the README's `make install`; prefix
# /usr/local by default): the `gavel` binaries (with the runtime, `gavel-engine` beside
# `gavel`), the C++ iterator header (include it as "gavel/iterator/gavel_iterator.h"; it
# needs nlohmann-json3-dev) and the Python iterator
# client, copied as a plain module into the prefix's dist-packages of Debian's python3
# (/usr/local/lib/python3.11/dist-packages on Debian 12), where `import gavel_iterator` finds
# it without path edits. No pip: Debian 12's pip refuses to install outside a virtual
# environment (PEP 668); `pip install ./python` is for virtual environments.
include(GNUInstallDirs)
install(TARGETS gavel RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET gavel_engine)
  # The front runs it from its own directory (src/gavel/cli/front_main.cc).
  install(TARGETS gavel_engine RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/src/gavel/iterator/gavel_iterator.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gavel/iterator)

# Where the module goes, relative to the prefix: lib/python3.<minor>/dist-packages, the
# directory Debian's python3 puts on sys.path for /usr/local (the version-less
# lib/python3/dist-packages is searched only under /usr).
set(GAVEL_PYTHON_DIR "" CACHE STRING
    "Install directory of the Python iterator client, relative to the prefix (default: Debian python3's)")
if(NOT GAVEL_PYTHON_DIR)
  execute_process(
    COMMAND python3 -c "import sys; print('%d.%d' % sys.version_info[:2])"
    OUTPUT_VARIABLE _gavel_py_version OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _gavel_py_result)
  if(NOT _gavel_py_result EQUAL 0 OR NOT _gavel_py_version)
    message(FATAL_ERROR "python3 not found: set GAVEL_PYTHON_DIR (e.g. lib/python3.11/dist-packages)")
  endif()
  set(GAVEL_PYTHON_DIR "lib/python${_gavel_py_version}/dist-packages")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/python/gavel_iterator.py DESTINATION ${GAVEL_PYTHON_DIR})

# The data files the binary reads by default (the throughput table, the Philly job
# distribution, the physics tables): beside the binary, in PREFIX/share/gavel, where an
# installed gavel looks first (src/gavel/core/shipped_data.h; GAVEL_DATA_DIR overrides).
install(FILES ${PROJECT_SOURCE_DIR}/data/simulation_throughputs.json
              ${PROJECT_SOURCE_DIR}/data/placement_penalty.csv
              ${PROJECT_SOURCE_DIR}/data/restart_overhead.csv
              ${PROJECT_SOURCE_DIR}/data/philly_job_distribution.csv
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gavel)
# The measuring program `gavel profile` runs (src/gavel/core/shipped_data.h, ShippedProgramFile).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/python/gavel_profile.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gavel)
