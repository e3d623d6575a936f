# A subset of nixpkgs lib/licenses.nix: same attribute names, spdxId, shortName, fullName
# and `free`. `nvidiaCuda*` and `issl` are the licenses the real CUDA and oneAPI packages carry.
{ lib }:
let
  mkLicense =
    lname:
    {
      shortName ? lname,
      fullName,
      spdxId ? null,
      free ? true,
      redistributable ? free,
      url ? null,
      deprecated ? false,
    }@attrs:
    {
      inherit shortName fullName free redistributable deprecated;
    }
    // lib.optionalAttrs (spdxId != null) {
      inherit spdxId;
      url = "https://spdx.org/licenses/${spdxId}.html";
    }
    // lib.optionalAttrs (url != null) { inherit url; };
in
builtins.mapAttrs mkLicense {
  apsl20 = {
    spdxId = "APSL-2.0";
    fullName = "Apple Public Source License 2.0";
  };
  asl20 = {
    spdxId = "Apache-2.0";
    fullName = "Apache License 2.0";
  };
  bsd2 = {
    spdxId = "BSD-2-Clause";
    fullName = ''BSD 2-clause "Simplified" License'';
  };
  bsd3 = {
    spdxId = "BSD-3-Clause";
    fullName = ''BSD 3-clause "New" or "Revised" License'';
  };
  bsl11 = {
    shortName = "bsl11";
    fullName = "Business Source License 1.1";
    free = false;
    redistributable = true;
  };
  cc0 = {
    spdxId = "CC0-1.0";
    fullName = "Creative Commons Zero v1.0 Universal";
  };
  gpl2Only = {
    spdxId = "GPL-2.0-only";
    fullName = "GNU General Public License v2.0 only";
  };
  gpl2Plus = {
    spdxId = "GPL-2.0-or-later";
    fullName = "GNU General Public License v2.0 or later";
  };
  gpl3Only = {
    spdxId = "GPL-3.0-only";
    fullName = "GNU General Public License v3.0 only";
  };
  gpl3Plus = {
    spdxId = "GPL-3.0-or-later";
    fullName = "GNU General Public License v3.0 or later";
  };
  isc = {
    spdxId = "ISC";
    fullName = "ISC License";
  };
  issl = {
    shortName = "Intel Simplified Software License";
    fullName = "Intel Simplified Software License";
    url = "https://software.intel.com/en-us/license/intel-simplified-software-license";
    free = false;
    redistributable = true;
  };
  lgpl21Plus = {
    spdxId = "LGPL-2.1-or-later";
    fullName = "GNU Lesser General Public License v2.1 or later";
  };
  lgpl3Plus = {
    spdxId = "LGPL-3.0-or-later";
    fullName = "GNU Lesser General Public License v3.0 or later";
  };
  llvm-exception = {
    spdxId = "LLVM-exception";
    fullName = "LLVM Exception";
  };
  mit = {
    spdxId = "MIT";
    fullName = "MIT License";
  };
  mpl20 = {
    spdxId = "MPL-2.0";
    fullName = "Mozilla Public License 2.0";
  };
  ncsa = {
    spdxId = "NCSA";
    fullName = "University of Illinois/NCSA Open Source License";
  };
  nvidiaCuda = {
    shortName = "CUDA EULA";
    fullName = "CUDA Toolkit End User License Agreement (EULA)";
    url = "https://docs.nvidia.com/cuda/eula/index.html#cuda-toolkit-supplement-license-agreement";
    free = false;
  };
  nvidiaCudaRedist = {
    shortName = "CUDA EULA";
    fullName = "CUDA Toolkit End User License Agreement (EULA)";
    url = "https://docs.nvidia.com/cuda/eula/index.html#cuda-toolkit-supplement-license-agreement";
    free = false;
    redistributable = true;
  };
  psfl = {
    spdxId = "Python-2.0";
    fullName = "Python Software Foundation License version 2";
  };
  unfree = {
    shortName = "unfree";
    fullName = "Unfree";
    free = false;
  };
  unfreeRedistributable = {
    shortName = "unfreeRedistributable";
    fullName = "Unfree redistributable";
    free = false;
    redistributable = true;
  };
  unlicense = {
    spdxId = "Unlicense";
    fullName = "The Unlicense";
  };
  zlib = {
    spdxId = "Zlib";
    fullName = "zlib License";
  };
}
