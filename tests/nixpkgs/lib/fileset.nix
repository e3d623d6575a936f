# A small `lib.fileset` (nixpkgs lib/fileset/default.nix) with the real semantics for the
# subset generated code uses: toSource, union(s), difference, intersection, maybeMissing,
# fileFilter, toList. Error messages are copied from lib/fileset/internal.nix (_coerce) and
# default.nix (toSource).
#
# Representation (stub-only; real file sets are trees): { _type = "fileset"; _bases; _member; }
# where _member tests an absolute path string and its type. toSource copies exactly the files
# that are members, plus the directories leading to them, through builtins.path + filter.
# Like the real trees, a lookup costs the same whatever the number of files: a union keeps
# its single files in an attribute set (`_files`), and toSource the directories leading to
# a base in another, so a set of thousands of files is copied in time linear in them.
# Difference from real: a directory whose files are all excluded stays as an empty directory.
{ lib }:
let
  inherit (builtins)
    isPath
    isAttrs
    typeOf
    pathExists
    any
    all
    filter
    concatMap
    ;
  inherit (lib.strings) hasPrefix hasSuffix isStringLike;

  noEvalMessage = ''
    lib.fileset: Directly evaluating a file set is not supported.
      To turn it into a usable source, use `lib.fileset.toSource`.
      To pretty-print the contents, use `lib.fileset.trace` or `lib.fileset.traceVal`.'';

  create = bases: member: {
    _type = "fileset";
    _bases = bases;
    _member = member;
    _noEval = throw noEvalMessage;
  };

  empty = create [ ] (_: _: false);

  under = base: p: p == base || hasPrefix (base + "/") p;

  singleton =
    path:
    let
      s = toString path;
    in
    if lib.filesystem.pathType path == "directory" then
      create [ s ] (p: _: under s p)
    else
      create [ s ] (p: _: p == s) // { _file = s; };

  # An attribute set with the strings `names` as its names.
  setOf = names: builtins.listToAttrs (map (name: { inherit name; value = null; }) names);

  # The directories above `s` (an absolute path string), nearest first.
  ancestors =
    s:
    let
      up = dirOf s;
    in
    if up == s || up == "/" || up == "." then [ ] else [ up ] ++ ancestors up;

  coerce =
    context: value:
    if isAttrs value && value._type or "" == "fileset" then
      value
    else if !isPath value then
      if value ? _isLibCleanSourceWith then
        throw ''
          ${context} is a `lib.sources`-based value, but it should be a file set or a path instead.
              To convert a `lib.sources`-based value to a file set you can use `lib.fileset.fromSource`.
              Note that this only works for sources created from paths.''
      else if isStringLike value then
        throw ''
          ${context} ("${toString value}") is a string-like value, but it should be a file set or a path instead.
              Paths represented as strings are not supported by `lib.fileset`, use `lib.sources` or derivations instead.''
      else
        throw "${context} is of type ${typeOf value}, but it should be a file set or a path instead."
    else if !pathExists value then
      throw ''
        ${context} (${toString value}) is a path that does not exist.
            To create a file set from a path that may not exist, use `lib.fileset.maybeMissing`.''
    else
      singleton value;

  unionList =
    filesets:
    let
      single = filter (fs: fs ? _file) filesets;
      others = filter (fs: !(fs ? _file)) filesets;
      files = setOf (map (fs: fs._file) single);
    in
    create (concatMap (fs: fs._bases) filesets) (
      p: t: files ? ${p} || any (fs: fs._member p t) others
    );

  # Whether the directory `p` is above one of `bases` (`under` of a base, not the base).
  ancestorOfAny =
    bases:
    let
      above = setOf (concatMap ancestors bases);
    in
    p: above ? ${p};

  memberPaths =
    fileset:
    concatMap (
      b:
      let
        bp = /. + b;
      in
      if lib.filesystem.pathType bp == "directory" then
        filter (f: fileset._member (toString f) "regular") (lib.filesystem.listFilesRecursive bp)
      else if fileset._member b "regular" then
        [ bp ]
      else
        [ ]
    ) (lib.lists.unique fileset._bases);
in
{
  maybeMissing =
    path:
    if !isPath path then
      throw "lib.fileset.maybeMissing: Argument is of type ${typeOf path}, but it should be a path instead."
    else if !pathExists path then
      empty
    else
      singleton path;

  union =
    fileset1: fileset2:
    unionList [
      (coerce "lib.fileset.union: First argument" fileset1)
      (coerce "lib.fileset.union: Second argument" fileset2)
    ];

  unions =
    filesets:
    if !builtins.isList filesets then
      throw "lib.fileset.unions: Argument is of type ${typeOf filesets}, but it should be a list instead."
    else
      unionList (lib.lists.imap0 (i: v: coerce "lib.fileset.unions: Element ${toString i}" v) filesets);

  intersection =
    fileset1: fileset2:
    let
      a = coerce "lib.fileset.intersection: First argument" fileset1;
      b = coerce "lib.fileset.intersection: Second argument" fileset2;
    in
    create (a._bases ++ b._bases) (p: t: a._member p t && b._member p t);

  difference =
    positive: negative:
    let
      a = coerce "lib.fileset.difference: First argument (positive set)" positive;
      b = coerce "lib.fileset.difference: Second argument (negative set)" negative;
    in
    create a._bases (p: t: a._member p t && !(b._member p t));

  fileFilter =
    predicate: path:
    if !builtins.isFunction predicate then
      throw "lib.fileset.fileFilter: First argument is of type ${typeOf predicate}, but it should be a function instead."
    else if !isPath path then
      throw "lib.fileset.fileFilter: Second argument is of type ${typeOf path}, but it should be a path instead."
    else if !pathExists path then
      throw "lib.fileset.fileFilter: Second argument (${toString path}) is a path that does not exist."
    else
      let
        s = toString path;
      in
      create [ s ] (
        p: t:
        under s p
        && (
          t == "directory"
          || predicate {
            name = baseNameOf p;
            type = t;
            hasExt = ext: hasSuffix ".${ext}" (baseNameOf p);
          }
        )
      );

  toSource =
    { root, fileset }:
    let
      fs = coerce "lib.fileset.toSource: `fileset`" fileset;
      rootStr = toString root;
      outside = filter (b: !(under rootStr b)) fs._bases;
      above = ancestorOfAny fs._bases;
      filterFn = p: t: fs._member p t || (t == "directory" && above p);
    in
    if !isPath root then
      if root ? _isLibCleanSourceWith then
        throw ''
          lib.fileset.toSource: `root` is a `lib.sources`-based value, but it should be a path instead.
              To use a `lib.sources`-based value, convert it to a file set using `lib.fileset.fromSource` and pass it as `fileset`.
              Note that this only works for sources created from paths.''
      else if isStringLike root then
        throw ''
          lib.fileset.toSource: `root` (${toString root}) is a string-like value, but it should be a path instead.
              Paths in strings are not supported by `lib.fileset`, use `lib.sources` or derivations instead.''
      else
        throw "lib.fileset.toSource: `root` is of type ${typeOf root}, but it should be a path instead."
    else if !pathExists root then
      throw "lib.fileset.toSource: `root` (${rootStr}) is a path that does not exist."
    else if lib.filesystem.pathType root != "directory" then
      throw ''
        lib.fileset.toSource: `root` (${rootStr}) is a file, but it should be a directory instead. Potential solutions:
            - If you want to import the file into the store _without_ a containing directory, use string interpolation or `builtins.path` instead of this function.
            - If you want to import the file into the store _with_ a containing directory, set `root` to the containing directory, such as ${toString (dirOf root)}, and set `fileset` to the file path.''
    else if outside != [ ] then
      throw ''
        lib.fileset.toSource: `fileset` could contain files in ${builtins.head outside}, which is not under the `root` (${rootStr}). Potential solutions:
            - Set `root` to ${builtins.head outside} or any directory higher up. This changes the layout of the resulting store path.
            - Set `fileset` to a file set that cannot contain files outside the `root` (${rootStr}). This could change the files included in the result.''
    else
      builtins.path {
        name = "source";
        path = root;
        filter = filterFn;
      };

  toList = fileset: memberPaths (coerce "lib.fileset.toList: Argument" fileset);

  traceVal =
    fileset:
    let
      fs = coerce "lib.fileset.traceVal: Argument" fileset;
    in
    builtins.trace (map toString (memberPaths fs)) fs;

  trace =
    fileset: val:
    builtins.trace (map toString (memberPaths (coerce "lib.fileset.trace: Argument" fileset))) val;

  fromSource = _: throw "lib.fileset.fromSource: not provided by the stub nixpkgs";
  gitTracked = _: throw "lib.fileset.gitTracked: not provided by the stub nixpkgs (needs builtins.fetchGit on a repository)";
  gitTrackedWith = _: _: throw "lib.fileset.gitTrackedWith: not provided by the stub nixpkgs";
}
