# Tests of `tvm-ffi.nix`: the flags of a TVM FFI extension and of a kernel that includes
# tvm-ffi's headers.
let
  inherit (import ../default.nix) tvmFfi;
  python = {
    outPath = "/py";
    sitePackages = "lib/python3.13/site-packages";
    libPrefix = "python3.13";
  };
  tvmFfiDrv = {
    outPath = "/tvm";
    pythonModule = python;
  };
  dir = "/tvm/lib/python3.13/site-packages/tvm_ffi";
in
{
  testFrameworkHasTheHeadersAndLinksLibtvmFfi = {
    expr = tvmFfi.framework {
      tvmFfi = tvmFfiDrv;
      inherit python;
    };
    expected = {
      flags = [
        "-isystem"
        "${dir}/include"
        "-isystem"
        "/py/include/python3.13"
      ];
      libs = [
        "-L${dir}/lib"
        "-ltvm_ffi"
      ];
    };
  };

  testIncludeFlagsUseThePackagesOwnPython = {
    expr = tvmFfi.includeFlags tvmFfiDrv;
    expected = [
      "-isystem"
      "${dir}/include"
    ];
  };
}
