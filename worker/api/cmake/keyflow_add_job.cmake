# keyflow_add_job(<name> <sources>...)
#
# Builds the job library lib<name>.so from <sources> (one of them declares the jobs with
# KEYFLOW_JOB_LIBRARY, worker/api/job_definition.h): a shared object, loaded with dlopen by
# `keyflow jobs|run --job-library lib<name>.so` and by the workers. It links keyflow::sdk
# statically, is compiled as C++20 with hidden visibility and exports only the library's entry
# points, so two job libraries in one process never see each other's symbols. Symbols not
# found at link time are an error here (-Wl,--no-undefined), not when the library is loaded;
# so is a library without KEYFLOW_JOB_LIBRARY (the linker says "required symbol
# `keyflow_job_library' not defined"), which no worker could load.
#
#   find_package(keyflow REQUIRED)          # from an installation: CMAKE_PREFIX_PATH=<prefix>
#   keyflow_add_job(sessions sessions.cc)   # -> build/libsessions.so
#
# The target is an ordinary CMake target: add sources, definitions or libraries to it as usual
# (a library it links must be static and position-independent, or be present on every worker).
function(keyflow_add_job name)
  if(NOT ARGN)
    message(FATAL_ERROR "keyflow_add_job(${name}) needs at least one source file")
  endif()
  if(NOT TARGET keyflow::sdk)
    message(FATAL_ERROR "keyflow_add_job needs the keyflow::sdk target: find_package(keyflow) first")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE keyflow::sdk)
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    SUFFIX ".so"
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  set(map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/keyflow_job.map)
  # A fuzzer build (scripts/fuzz.sh: clang, -fsanitize=fuzzer-no-link,address) leaves the
  # sanitizer runtime's symbols for an executable to define, so a job library cannot link with
  # --no-undefined there; the fuzzers never load job libraries.
  set(no_undefined -Wl,--no-undefined)
  if(KEYFLOW_BUILD_FUZZERS)
    set(no_undefined "")
  endif()
  target_link_options(${name} PRIVATE ${no_undefined} -Wl,--exclude-libs,ALL
                                      -Wl,--version-script=${map}
                                      -Wl,--require-defined=keyflow_job_library)
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${map})
endfunction()
