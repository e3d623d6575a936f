/**
  Source sets: a derivation's `src` holds exactly the files it declares, so editing one
  kernel's files changes only that kernel's derivation (and the final link).
*/
{
  /**
    A source tree with exactly `files` (paths relative to `root`), as a store path.

    # Inputs

    `lib`
    : nixpkgs `lib` (for `lib.fileset`)

    `root`
    : the project root, a path

    `files`
    : relative file paths, as written in build.toml

    # Type

    ```
    select :: Lib -> Path -> [ String ] -> StorePath
    ```

    # Examples

    ```nix
    select lib ./. [ "relu_cpu/relu.cpp" ]
    => «a store path named `source` that holds relu_cpu/relu.cpp and nothing else»
    ```
  */
  select =
    lib: root: files:
    lib.fileset.toSource {
      inherit root;
      fileset = lib.fileset.unions (map (file: root + "/${file}") files);
    };

  /**
    A source tree with `files` plus every file under `dir` whose extension is one of
    `extensions` (the kernel's Python package, e.g. `torch-ext/relu` with `py`, `pyi`).

    # Type

    ```
    selectWithPackage :: Lib -> Path -> [ String ] -> String -> [ String ] -> StorePath
    ```
  */
  selectWithPackage =
    lib: root: files: dir: extensions:
    lib.fileset.toSource {
      inherit root;
      fileset = lib.fileset.unions (
        map (file: root + "/${file}") files
        ++ [ (lib.fileset.fileFilter (file: builtins.any file.hasExt extensions) (root + "/${dir}")) ]
      );
    };
}
