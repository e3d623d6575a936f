// Registration macros for torch extensions built by nixgen.
//
// The extension build adds this directory to the include path of the
// framework binding (`[torch] src`, e.g. torch-ext/torch_binding.cpp) and
// defines TORCH_EXTENSION_NAME to the op namespace of the build variant
// (`_<python_name>_<backend>_<unique_id>`). The macro names match the
// huggingface/kernels kernel-builder `registration.h`, so bindings written for
// the anchor compile unchanged.
//
// The binding is compiled with Py_LIMITED_API (Python abi3), so only the
// limited C API may be used here: no pybind11, no <torch/extension.h>.
#pragma once

#include <Python.h>

#define _CONCAT(A, B) A##B
#define CONCAT(A, B) _CONCAT(A, B)

#define _STRINGIFY(A) #A
#define STRINGIFY(A) _STRINGIFY(A)

// TORCH_LIBRARY needs a literal token as its namespace; these wrappers expand
// NAME first, so TORCH_EXTENSION_NAME (a macro) can be passed.
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) \
  TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)

// The same for the torch stable ABI (torch/csrc/stable/library.h, torch >= 2.10): a
// binding of a `torch-stable-abi*` variant registers with these, and is compiled with
// TORCH_TARGET_VERSION set to the ABI version it targets.
#define STABLE_TORCH_LIBRARY_EXPAND(NAME, MODULE) STABLE_TORCH_LIBRARY(NAME, MODULE)
#define STABLE_TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) \
  STABLE_TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)

// An empty Python module, so that `from . import <NAME>` in _ops.py loads the
// shared object; loading it runs the TORCH_LIBRARY static registrations.
#define REGISTER_EXTENSION(NAME)                                               \
  PyMODINIT_FUNC CONCAT(PyInit_, NAME)() {                                     \
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,                 \
                                        STRINGIFY(NAME), nullptr, 0, nullptr}; \
    return PyModule_Create(&module);                                           \
  }
