/**
  What the framework extension of each backend is built and linked with.

  The kernels choose their own builders (their generated files name them); the extension
  links one backend's kernels, so its stdenv and runtime library depend on the variant.
  Each entry takes the variant's package set and returns
  `{ stdenv, nativeBuildInputs, buildInputs, linkFlags }`.
*/
{
  cpu = pkgs: {
    inherit (pkgs) stdenv;
    nativeBuildInputs = [ ];
    buildInputs = [ ];
    linkFlags = [ ];
  };

  cuda = pkgs: {
    stdenv = pkgs.cudaPackages.backendStdenv;
    nativeBuildInputs = [ ];
    buildInputs = [ pkgs.cudaPackages.cuda_cudart ];
    # nvcc names host stubs after its process id (tmpxft_<pid>_…); dropping local
    # symbols keeps the extension's bytes independent of it.
    linkFlags = [ "-lcudart" "-Wl,--discard-all" ];
  };

  rocm = pkgs: {
    inherit (pkgs) stdenv;
    nativeBuildInputs = [ pkgs.rocmPackages.clr ];
    buildInputs = [ pkgs.rocmPackages.clr ];
    linkFlags = [ "-lamdhip64" ];
  };

  xpu = pkgs: {
    stdenv = pkgs.intel-oneapi.base.stdenv;
    nativeBuildInputs = [ ];
    buildInputs = [ pkgs.xpuPackages.oneapi-torch-dev or pkgs.intel-oneapi.base ];
    linkFlags = [ "-lsycl" ];
  };

  metal = pkgs: {
    inherit (pkgs) stdenv;
    nativeBuildInputs = [ ];
    buildInputs = [ pkgs.apple-sdk_26 ];
    linkFlags = [ "-framework" "Metal" "-framework" "Foundation" ];
  };
}
