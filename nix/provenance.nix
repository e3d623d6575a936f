/**
  Build provenance of a kernel project: the git commit its flake was built from and
  whether the work tree had uncommitted changes, recorded in each built variant's
  `metadata.json` (`provenance`, the keys the `kernels` client reads:
  kernels-data/src/metadata.rs `Provenance`, `GitStatus`; its `DirtyValidator` warns
  about a dirty one).

  The commit comes from the flake's `self`, as the anchor's
  nix-builder/lib/flake-provenance.nix takes it (the one rule here, `fromSelf`, for the
  kernel's flake and for the toolchain's, `project.builderProvenance`; held equal to the
  anchor's file by tests/test_anchor_build_set.py): `self.rev` (a clean git tree),
  `self.dirtyRev` (`<commit>-dirty`, Nix ≥ 2.17), neither for a `path:` flake. The Nix
  sandbox has no `.git`, so it cannot be read at build time.

  Only the small `stamp` derivation depends on it: the kernels, the binding and the
  extension never see the revision, so a new commit rewrites one `metadata.json` per
  variant (with its digest computed again, `nixgen.trust`) and relinks nothing.
*/
{ extension, trust }:
let
  inherit (builtins) substring stringLength;
in
{
  /**
    The kernel source's git state from a flake's `self`: `{ commit, dirty }`, or `null`
    when no commit is known (no `self`: `nix-build`; a `path:` flake; a dirty git tree
    on Nix < 2.17, which has no `dirtyRev`: the client's `GitStatus` needs a full commit,
    so nothing is claimed rather than a clean or a made-up one).

    # Examples

    ```nix
    fromSelf { rev = "0123…"; }
    => { commit = "0123…"; dirty = false; }
    fromSelf { dirtyRev = "0123…-dirty"; }
    => { commit = "0123…"; dirty = true; }
    fromSelf null
    => null
    ```
  */
  fromSelf =
    self:
    if self == null then
      null
    else if self ? rev then
      {
        commit = self.rev;
        dirty = false;
      }
    else if self ? dirtyRev then
      let
        # `<commit>-dirty`: the suffix is Nix's (libfetchers/git.cc), removed as the
        # anchor removes it (`lib.removeSuffix "-dirty"`: a value without it is kept).
        length = stringLength self.dirtyRev;
        bare = length - stringLength "-dirty";
      in
      {
        commit =
          if bare >= 0 && substring bare 6 self.dirtyRev == "-dirty" then
            substring 0 bare self.dirtyRev
          else
            self.dirtyRev;
        dirty = true;
      }
    else
      null;

  /**
    `metadata.json`'s `provenance`: the builder (`kernel-builder`, its `version`; nixgen
    records its own, and no git state of its own) and the kernel's (`kernel`, when known).

    # Type

    ```
    record :: { nixgenVersion :: String, kernel :: { commit, dirty } | null } -> AttrSet
    ```
  */
  record =
    { nixgenVersion, kernel }:
    {
      "kernel-builder".version = "nixgen ${nixgenVersion}";
    }
    // (if kernel == null then { } else { inherit kernel; });

  /**
    A built variant with `provenance` in its `metadata.json`: a copy of `variant` (a
    derivation whose `passthru.nixgen.metadata` is its metadata) with that file rewritten,
    its `digest` computed again from the copy's files by the program that wrote it in the
    variant's build (`nixgen.trust`, support/digest.py, with the package set's build
    Python): the other files, `symbols.json` included, are the variant's. `passthru` is the
    variant's, plus `nixgen.unstamped` (the variant itself). A variant without that metadata
    (an extension file taken over and changed) is left as it is.

    # Inputs

    `pkgs`
    : a package set (its `runCommand`)

    `provenance`
    : what `record` gives
  */
  stamp =
    {
      pkgs,
      provenance,
    }:
    variant:
    let
      metadata = variant.passthru.nixgen.metadata // {
        inherit provenance;
      };
      file = extension.metadataFileOf metadata;
    in
    if !(variant ? passthru.nixgen.metadata) then
      variant
    else
      pkgs.runCommand variant.name
      {
        passthru = variant.passthru // {
          nixgen = variant.passthru.nixgen // {
            unstamped = variant;
          };
        };
      }
      ''
        cp -r ${variant} "$out"
        chmod -R u+w "$out"
        ${pkgs.buildPackages.python3.interpreter} ${trust.digestProgram} write "$out" --metadata ${file}
      '';
}
