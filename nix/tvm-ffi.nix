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

  /**
    Flags that make the tvm-ffi headers (and DLPack's) visible to a kernel of a tvm-ffi
    project (`depends = ["tvm-ffi"]`, implied there).

    # Type

    ```
    includeFlags :: Derivation -> [ String ]
    ```
  */
  includeFlags = tvmFfi: [
    "-isystem"
    "${tvmFfi}/${tvmFfi.pythonModule.sitePackages}/tvm_ffi/include"
  ];
}
