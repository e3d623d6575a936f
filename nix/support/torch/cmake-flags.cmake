# nixgen: what torch's CMake config gives the compiles of an extension built against it.
#
# The kernels toolchain compiles a torch extension with a CMake project that calls
# `find_package(Torch)` and links its module to the `torch` target, so every compile of
# that project gets what torch's config files put there: the flags
# `share/cmake/Caffe2/public/cuda.cmake` appends to CMAKE_CUDA_FLAGS (a CUDA build of
# torch), and the usage requirements (compile definitions and options) of the `torch`
# target and of every target it links (`share/cmake/Caffe2/Caffe2Targets.cmake`,
# `share/cmake/Torch/TorchConfig.cmake`). This script runs those files, unchanged, with
# CMake's own interpreter in script mode, so every condition in them is evaluated as CMake
# evaluates it; only the commands that need a configured project are replaced:
#
#   - the target commands (`add_library`, `set_property(TARGET …)`,
#     `set_target_properties`, `get_target_property`, `target_*`) record each target's
#     properties instead of creating it;
#   - `find_package`: `Caffe2` runs torch's own Caffe2Config.cmake; `CUDA` and
#     `CUDAToolkit` report the variant's toolkit (NIXGEN_CUDA_VERSION) as found; any other
#     package is reported as not found (the optional cuDNN, cuSPARSELt, MKL…: their targets
#     only link libraries);
#   - `enable_language`: nothing; `try_run` (cuda.cmake's probe of the version in cuda.h)
#     reports the variant's toolkit version;
#   - `cuda_select_nvcc_arch_flags` (FindCUDA's, which torch turns into `-gencode` flags
#     from TORCH_CUDA_ARCH_LIST): none. The kernels toolchain clears every `-gencode` from
#     CMAKE_CUDA_FLAGS and sets its own per source (its `clear_gencode_flags`); nixgen's
#     come from the plan. The result is cleared the same way, for a torch that adds some
#     elsewhere.
#
# The platform is the one variants are built for: Linux (UNIX), GCC.
#
# Usage:
#   cmake -DTORCH_DIR=<site-packages>/torch -DNIXGEN_CUDA_VERSION=<major.minor>
#         -DNIXGEN_OUT=<file> -DNIXGEN_WORK=<scratch dir> -P cmake-flags.cmake
#
# NIXGEN_CUDA_VERSION may be empty (a torch without CUDA). NIXGEN_OUT gets one line per
# value, `<kind>\t<value>`: `cuda-flags`, `cuda-release-flags`, `cxx-flags`,
# `cxx-release-flags` (the words of those variables), `definition` and `option` (the usage
# requirements of `torch`, in CMake's order, without duplicates), `external` (a target
# torch links that its config does not define, such as CUDA::cudart: its requirements
# come from the toolkit), `found` and `absent` (a package reported as found, as not found).

cmake_minimum_required(VERSION 3.18)

foreach(_nixgen_var TORCH_DIR NIXGEN_OUT NIXGEN_WORK)
  if(NOT DEFINED ${_nixgen_var} OR "${${_nixgen_var}}" STREQUAL "")
    message(FATAL_ERROR "nixgen cmake-flags: -D${_nixgen_var}=… is required")
  endif()
endforeach()

set(UNIX 1)
set(LINUX 1)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_CXX_COMPILER_ID GNU)
set(CMAKE_C_COMPILER_ID GNU)
set(PROJECT_BINARY_DIR "${NIXGEN_WORK}")
set(PROJECT_SOURCE_DIR "${NIXGEN_WORK}")
set(CMAKE_BINARY_DIR "${NIXGEN_WORK}")
set(CMAKE_CURRENT_BINARY_DIR "${NIXGEN_WORK}")
set(CMAKE_BUILD_TYPE Release)
set(CMAKE_CUDA_FLAGS "")
set(CMAKE_CUDA_FLAGS_RELEASE "")
set(CMAKE_CXX_FLAGS "")
set(CMAKE_CXX_FLAGS_RELEASE "")
if(NOT "${NIXGEN_CUDA_VERSION}" STREQUAL "")
  set(CMAKE_CUDA_COMPILER_VERSION "${NIXGEN_CUDA_VERSION}")
endif()

# ------------------------------------------------------------------ recorded targets
# Properties live in global properties named `nixgen|<target>|<PROPERTY>`.

function(_nixgen_target_name out name)
  get_property(_alias GLOBAL PROPERTY "nixgen-alias|${name}")
  if(_alias)
    set(${out} "${_alias}" PARENT_SCOPE)
  else()
    set(${out} "${name}" PARENT_SCOPE)
  endif()
endfunction()

function(_nixgen_set target property append)
  _nixgen_target_name(target "${target}")
  if(append)
    _set_property(GLOBAL APPEND PROPERTY "nixgen|${target}|${property}" ${ARGN})
  else()
    _set_property(GLOBAL PROPERTY "nixgen|${target}|${property}" ${ARGN})
  endif()
endfunction()

function(_nixgen_get out target property)
  _nixgen_target_name(target "${target}")
  get_property(_value GLOBAL PROPERTY "nixgen|${target}|${property}")
  set(${out} "${_value}" PARENT_SCOPE)
endfunction()

function(_nixgen_known out target)
  _nixgen_target_name(target "${target}")
  get_property(_targets GLOBAL PROPERTY "nixgen-targets")
  if("${target}" IN_LIST _targets)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(add_library name)
  if("${ARGV1}" STREQUAL "ALIAS")
    _set_property(GLOBAL PROPERTY "nixgen-alias|${name}" "${ARGV2}")
  else()
    _set_property(GLOBAL APPEND PROPERTY "nixgen-targets" "${name}")
  endif()
endfunction()

function(set_target_properties)
  set(_targets "")
  set(_i 0)
  while(_i LESS ARGC)
    if("${ARGV${_i}}" STREQUAL "PROPERTIES")
      break()
    endif()
    list(APPEND _targets "${ARGV${_i}}")
    math(EXPR _i "${_i} + 1")
  endwhile()
  math(EXPR _i "${_i} + 1")
  while(_i LESS ARGC)
    math(EXPR _v "${_i} + 1")
    foreach(_target IN LISTS _targets)
      _nixgen_set("${_target}" "${ARGV${_i}}" FALSE "${ARGV${_v}}")
    endforeach()
    math(EXPR _i "${_i} + 2")
  endwhile()
endfunction()

function(set_property scope)
  if(NOT "${scope}" STREQUAL "TARGET")
    _set_property(${ARGV})
    return()
  endif()
  set(_targets "")
  set(_append FALSE)
  set(_i 1)
  while(_i LESS ARGC)
    set(_arg "${ARGV${_i}}")
    math(EXPR _i "${_i} + 1")
    if(_arg STREQUAL "APPEND" OR _arg STREQUAL "APPEND_STRING")
      set(_append TRUE)
    elseif(_arg STREQUAL "PROPERTY")
      break()
    else()
      list(APPEND _targets "${_arg}")
    endif()
  endwhile()
  set(_property "${ARGV${_i}}")
  math(EXPR _i "${_i} + 1")
  set(_values "")
  while(_i LESS ARGC)
    list(APPEND _values "${ARGV${_i}}")
    math(EXPR _i "${_i} + 1")
  endwhile()
  foreach(_target IN LISTS _targets)
    _nixgen_set("${_target}" "${_property}" ${_append} ${_values})
  endforeach()
endfunction()

function(get_target_property out target property)
  _nixgen_get(_value "${target}" "${property}")
  if("${_value}" STREQUAL "")
    set(${out} "${out}-NOTFOUND" PARENT_SCOPE)
  else()
    set(${out} "${_value}" PARENT_SCOPE)
  endif()
endfunction()

# target_<kind>(target [INTERFACE|PUBLIC|PRIVATE|SYSTEM|BEFORE|AFTER] items…): the
# INTERFACE and PUBLIC items, appended to INTERFACE_<PROPERTY>.
function(_nixgen_target_command property target)
  set(_scope INTERFACE)
  set(_items "")
  foreach(_arg IN LISTS ARGN)
    if(_arg STREQUAL "INTERFACE" OR _arg STREQUAL "PUBLIC" OR _arg STREQUAL "PRIVATE")
      set(_scope "${_arg}")
    elseif(_arg STREQUAL "SYSTEM" OR _arg STREQUAL "BEFORE" OR _arg STREQUAL "AFTER")
    elseif(NOT _scope STREQUAL "PRIVATE")
      list(APPEND _items "${_arg}")
    endif()
  endforeach()
  if(_items)
    _nixgen_set("${target}" "INTERFACE_${property}" TRUE ${_items})
  endif()
endfunction()

function(target_link_libraries target)
  _nixgen_target_command(LINK_LIBRARIES "${target}" ${ARGN})
endfunction()
function(target_compile_definitions target)
  _nixgen_target_command(COMPILE_DEFINITIONS "${target}" ${ARGN})
endfunction()
function(target_compile_options target)
  _nixgen_target_command(COMPILE_OPTIONS "${target}" ${ARGN})
endfunction()
function(target_include_directories target)
  _nixgen_target_command(INCLUDE_DIRECTORIES "${target}" ${ARGN})
endfunction()
function(target_link_directories target)
  _nixgen_target_command(LINK_DIRECTORIES "${target}" ${ARGN})
endfunction()
function(target_link_options target)
  _nixgen_target_command(LINK_OPTIONS "${target}" ${ARGN})
endfunction()

# ------------------------------------------------------------------ packages, probes

function(enable_language)
endfunction()

macro(find_package _nixgen_package)
  if("${_nixgen_package}" STREQUAL "Caffe2")
    set(CMAKE_FIND_PACKAGE_NAME Caffe2)
    include("${TORCH_DIR}/share/cmake/Caffe2/Caffe2Config.cmake")
    unset(CMAKE_FIND_PACKAGE_NAME)
    # Caffe2Targets.cmake checks with `if(TARGET …)` that the targets it links exist, which
    # no recorded target does in script mode: a target it names missing is fine when this
    # script recorded it (Caffe2Config.cmake's protobuf::libprotobuf), and an error otherwise.
    if(DEFINED Caffe2_FOUND AND NOT Caffe2_FOUND)
      string(REGEX MATCH "missing: *(.*)$" _nixgen_missing "${Caffe2_NOT_FOUND_MESSAGE}")
      separate_arguments(_nixgen_missing UNIX_COMMAND "${CMAKE_MATCH_1}")
      foreach(_nixgen_target IN LISTS _nixgen_missing)
        _nixgen_known(_nixgen_is_known "${_nixgen_target}")
        if(NOT _nixgen_is_known)
          message(FATAL_ERROR "nixgen cmake-flags: torch's Caffe2 config: ${Caffe2_NOT_FOUND_MESSAGE}")
        endif()
      endforeach()
    endif()
    set(Caffe2_FOUND TRUE)
    _set_property(GLOBAL APPEND PROPERTY "nixgen-found" "Caffe2")
  elseif(("${_nixgen_package}" STREQUAL "CUDA" OR "${_nixgen_package}" STREQUAL "CUDAToolkit")
         AND NOT "${NIXGEN_CUDA_VERSION}" STREQUAL "")
    set(CUDA_FOUND TRUE)
    set(CUDA_VERSION "${NIXGEN_CUDA_VERSION}")
    set(CUDA_VERSION_STRING "${NIXGEN_CUDA_VERSION}")
    string(REPLACE "." ";" _nixgen_parts "${NIXGEN_CUDA_VERSION}")
    list(GET _nixgen_parts 0 CUDA_VERSION_MAJOR)
    list(GET _nixgen_parts 1 CUDA_VERSION_MINOR)
    set(CUDAToolkit_FOUND TRUE)
    set(CUDAToolkit_VERSION "${NIXGEN_CUDA_VERSION}")
    set(CUDAToolkit_VERSION_MAJOR "${CUDA_VERSION_MAJOR}")
    set(CUDAToolkit_VERSION_MINOR "${CUDA_VERSION_MINOR}")
    _set_property(GLOBAL APPEND PROPERTY "nixgen-found" "${_nixgen_package}")
  else()
    set(${_nixgen_package}_FOUND FALSE)
    _set_property(GLOBAL APPEND PROPERTY "nixgen-absent" "${_nixgen_package}")
  endif()
endmacro()

function(try_run run_result compile_result)
  set(_next "")
  foreach(_arg IN LISTS ARGN)
    if(_next STREQUAL "RUN_OUTPUT_VARIABLE")
      set(${_arg} "${NIXGEN_CUDA_VERSION}" PARENT_SCOPE)
    endif()
    set(_next "${_arg}")
  endforeach()
  set(${run_result} 0 PARENT_SCOPE)
  set(${compile_result} TRUE PARENT_SCOPE)
endfunction()

function(cuda_select_nvcc_arch_flags out)
  set(${out} "" PARENT_SCOPE)
endfunction()

# ------------------------------------------------------------------ torch's config

include("${TORCH_DIR}/share/cmake/Torch/TorchConfig.cmake")
if(NOT TORCH_FOUND AND NOT Torch_FOUND)
  message(FATAL_ERROR "nixgen cmake-flags: torch's TorchConfig.cmake did not find torch under ${TORCH_DIR}")
endif()
_nixgen_known(_has_torch torch)
if(NOT _has_torch)
  message(FATAL_ERROR "nixgen cmake-flags: torch's config defines no `torch` target")
endif()

# ------------------------------------------------------------------ usage requirements

# A property value with its `$<TARGET_PROPERTY:target,PROPERTY>` references replaced by
# that property (read the same way). Any other generator expression is an error: this
# script would not know what it gives.
function(_nixgen_expand out value)
  set(_result "")
  foreach(_item IN LISTS value)
    if(_item MATCHES "^\\$<TARGET_PROPERTY:([^,>]+),([A-Z_]+)>$")
      set(_t "${CMAKE_MATCH_1}")
      set(_p "${CMAKE_MATCH_2}")
      _nixgen_get(_inner "${_t}" "${_p}")
      _nixgen_expand(_inner "${_inner}")
      list(APPEND _result ${_inner})
    elseif(_item MATCHES "\\$<")
      message(FATAL_ERROR "nixgen cmake-flags: a generator expression this script cannot read: ${_item}")
    elseif(NOT _item STREQUAL "")
      list(APPEND _result "${_item}")
    endif()
  endforeach()
  set(${out} "${_result}" PARENT_SCOPE)
endfunction()

# The targets whose usage requirements a target linking `target` gets: itself and, through
# INTERFACE_LINK_LIBRARIES, every target it links (link-only items are not followed: their
# requirements are not propagated; flags and paths are not targets).
function(_nixgen_closure target)
  _nixgen_target_name(target "${target}")
  get_property(_seen GLOBAL PROPERTY "nixgen-closure")
  if("${target}" IN_LIST _seen)
    return()
  endif()
  _set_property(GLOBAL APPEND PROPERTY "nixgen-closure" "${target}")
  _nixgen_known(_known "${target}")
  if(NOT _known)
    _set_property(GLOBAL APPEND PROPERTY "nixgen-external" "${target}")
    return()
  endif()
  _nixgen_get(_links "${target}" INTERFACE_LINK_LIBRARIES)
  foreach(_item IN LISTS _links)
    if(_item MATCHES "^\\$<TARGET_PROPERTY:([^,>]+),INTERFACE_LINK_LIBRARIES>$")
      _nixgen_get(_inner "${CMAKE_MATCH_1}" INTERFACE_LINK_LIBRARIES)
      foreach(_link IN LISTS _inner)
        if(NOT _link MATCHES "^-" AND NOT _link MATCHES "\\$<" AND NOT _link MATCHES "/")
          _nixgen_closure("${_link}")
        endif()
      endforeach()
    elseif(_item MATCHES "^-" OR _item MATCHES "^\\$<LINK_ONLY:" OR _item MATCHES "/")
    elseif(_item MATCHES "\\$<")
      message(FATAL_ERROR "nixgen cmake-flags: a generator expression this script cannot read in ${target}'s INTERFACE_LINK_LIBRARIES: ${_item}")
    elseif(NOT _item STREQUAL "")
      _nixgen_closure("${_item}")
    endif()
  endforeach()
endfunction()

_nixgen_closure(torch)
get_property(_closure GLOBAL PROPERTY "nixgen-closure")
set(_definitions "")
set(_options "")
foreach(_target IN LISTS _closure)
  _nixgen_get(_defs "${_target}" INTERFACE_COMPILE_DEFINITIONS)
  _nixgen_expand(_defs "${_defs}")
  list(APPEND _definitions ${_defs})
  _nixgen_get(_opts "${_target}" INTERFACE_COMPILE_OPTIONS)
  _nixgen_expand(_opts "${_opts}")
  list(APPEND _options ${_opts})
endforeach()
list(REMOVE_DUPLICATES _definitions)
list(REMOVE_DUPLICATES _options)

# ------------------------------------------------------------------ the result

# The kernels toolchain's clear_gencode_flags, as a rule: no `-gencode arch=…` word pair.
string(REGEX REPLACE "-gencode[ =]arch=[^ ]+ *" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")

set(_lines "")
foreach(_pair
    "cuda-flags|CMAKE_CUDA_FLAGS" "cuda-release-flags|CMAKE_CUDA_FLAGS_RELEASE"
    "cxx-flags|CMAKE_CXX_FLAGS" "cxx-release-flags|CMAKE_CXX_FLAGS_RELEASE")
  string(REPLACE "|" ";" _pair "${_pair}")
  list(GET _pair 0 _kind)
  list(GET _pair 1 _variable)
  separate_arguments(_words UNIX_COMMAND "${${_variable}}")
  foreach(_word IN LISTS _words)
    string(APPEND _lines "${_kind}\t${_word}\n")
  endforeach()
endforeach()
foreach(_definition IN LISTS _definitions)
  string(APPEND _lines "definition\t${_definition}\n")
endforeach()
foreach(_option IN LISTS _options)
  string(APPEND _lines "option\t${_option}\n")
endforeach()
get_property(_external GLOBAL PROPERTY "nixgen-external")
foreach(_target IN LISTS _external)
  string(APPEND _lines "external\t${_target}\n")
endforeach()
get_property(_found GLOBAL PROPERTY "nixgen-found")
list(REMOVE_DUPLICATES _found)
foreach(_package IN LISTS _found)
  string(APPEND _lines "found\t${_package}\n")
endforeach()
get_property(_absent GLOBAL PROPERTY "nixgen-absent")
list(REMOVE_DUPLICATES _absent)
foreach(_package IN LISTS _absent)
  string(APPEND _lines "absent\t${_package}\n")
endforeach()
file(WRITE "${NIXGEN_OUT}" "${_lines}")
