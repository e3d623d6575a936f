/**
  Torch as the framework of an extension: where its headers and libraries are.
*/
{
  /**
    The torch package directory inside a torch derivation (`<site-packages>/torch`).

    # Type

    ```
    dir :: Derivation -> String
    ```
  */
  dir = torch: "${torch}/${torch.pythonModule.sitePackages}/torch";

  /**
    Flags that make torch's C++ headers visible (a kernel with `depends = ["torch"]`).

    # Type

    ```
    includeFlags :: Derivation -> [ String ]
    ```
  */
  includeFlags =
    torch:
    let
      dir = "${torch}/${torch.pythonModule.sitePackages}/torch";
    in
    [
      "-isystem"
      "${dir}/include"
      "-isystem"
      "${dir}/include/torch/csrc/api/include"
      # `__FILE__` in torch's inline headers would otherwise put torch's store path into
      # the objects (a needless runtime reference of the output).
      "-ffile-prefix-map=${dir}/include/=torch/include/"
    ];

  /**
    Compile and link flags of a Torch extension (abi3 Python module, no rpath).

    # Type

    ```
    framework :: { torch :: Derivation, python :: Derivation } -> { flags :: [ String ], libs :: [ String ] }
    ```
  */
  framework =
    { torch, python }:
    let
      dir = "${torch}/${torch.pythonModule.sitePackages}/torch";
    in
    {
      flags = [
        "-isystem"
        "${dir}/include"
        "-isystem"
        "${dir}/include/torch/csrc/api/include"
        "-ffile-prefix-map=${dir}/include/=torch/include/"
        "-isystem"
        "${python}/include/${python.libPrefix}"
      ];
      libs = [
        "-L${dir}/lib"
        "-lc10"
        "-ltorch_cpu"
      ];
    };
}
