# Tests of `provenance.nix`: the kernel's git state from a flake's `self` (as the anchor's
# nix-builder/lib/flake-provenance.nix reads it) and `metadata.json`'s `provenance`.
let
  inherit (import ../default.nix) provenance;
  rev = "0123456789abcdef0123456789abcdef01234567";
in
{
  testACleanTreeRecordsItsCommitAndNotDirty = {
    expr = provenance.fromSelf {
      inherit rev;
      shortRev = "0123456";
    };
    expected = {
      commit = rev;
      dirty = false;
    };
  };

  # Nix >= 2.17 gives a dirty git tree `dirtyRev = "<commit>-dirty"` and no `rev`.
  testADirtyTreeRecordsItsCommitAndDirty = {
    expr = provenance.fromSelf {
      dirtyRev = "${rev}-dirty";
      dirtyShortRev = "0123456-dirty";
    };
    expected = {
      commit = rev;
      dirty = true;
    };
  };

  # A `path:` flake, a dirty tree on Nix < 2.17 (no `dirtyRev`), no flake (`nix-build`).
  testNoRevisionIsNoKernelProvenance = {
    expr = [
      (provenance.fromSelf {
        narHash = "sha256-x";
        lastModified = 0;
      })
      (provenance.fromSelf null)
    ];
    expected = [
      null
      null
    ];
  };

  testTheRecordNamesNixgenAndTheKernelWhenKnown = {
    expr = [
      (provenance.record {
        nixgenVersion = "0.1.0";
        kernel = {
          commit = rev;
          dirty = false;
        };
      })
      (provenance.record {
        nixgenVersion = "0.1.0";
        kernel = null;
      })
    ];
    expected = [
      {
        "kernel-builder".version = "nixgen 0.1.0";
        kernel = {
          commit = rev;
          dirty = false;
        };
      }
      { "kernel-builder".version = "nixgen 0.1.0"; }
    ];
  };
}
