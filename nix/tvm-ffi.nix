/**
  TVM FFI as the framework of an extension: the `apache-tvm-ffi` package's headers and
  `libtvm_ffi`.
*/
{
  /**
    Compile and link flags of a TVM FFI extension.

    # Type

    ```
    framework :: { tvmFfi :: Derivation, python :: Derivation } -> { flags :: [ String ], libs :: [ String ] }
    ```
  */
  framework =
    { tvmFfi, python }:
    let
      dir = "${tvmFfi}/${python.sitePackages}/tvm_ffi";
    in
    {
      flags = [
        "-isystem"
        "${dir}/include"
        "-isystem"
        "${python}/include/${python.libPrefix}"
      ];
      libs = [
        "-L${dir}/lib"
        "-ltvm_ffi"
      ];
    };
}
