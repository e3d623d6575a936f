# The stub's `lib`: the subset of nixpkgs `lib/` that generated code and the stub use, with
# the same names, argument orders and semantics as the real functions (nixpkgs `lib/*.nix`).
# Everything is plain Nix built on builtins available in Nix 2.8.
let
  lib = builtins.foldl' (acc: part: acc // part) { } [
    flat
    {
      inherit
        trivial
        lists
        strings
        attrsets
        fixedPoints
        customisation
        versions
        asserts
        meta
        sources
        filesystem
        path
        generators
        ;
      licenses = import ./licenses.nix { inherit lib; };
      inherit (systemsLib) platforms systems;
      fileset = import ./fileset.nix { inherit lib; };
      # lib/default.nix re-exports `extend` so that flakes can add to lib.
      extend = f: lib // f lib lib;
    }
  ];

  systemsLib = import ./systems.nix { inherit lib; };

  inherit (builtins)
    isAttrs
    isList
    isString
    isInt
    isBool
    isFunction
    isPath
    typeOf
    length
    elemAt
    head
    tail
    filter
    genList
    concatLists
    concatMap
    attrNames
    attrValues
    listToAttrs
    hasAttr
    getAttr
    removeAttrs
    intersectAttrs
    foldl'
    replaceStrings
    stringLength
    substring
    match
    split
    toString
    toJSON
    ;

  # -- trivial (lib/trivial.nix) ------------------------------------------------------------
  trivial = rec {
    id = x: x;
    const = x: _: x;
    pipe = builtins.foldl' (x: f: f x);
    concat = x: y: x ++ y;
    or = x: y: x || y;
    and = x: y: x && y;
    xor = x: y: (!x) != (!y);
    flip = f: a: b: f b a;
    mapNullable = f: a: if a == null then a else f a;
    boolToString = b: if b then "true" else "false";
    mergeAttrs = x: y: x // y;
    min = x: y: if x < y then x else y;
    max = x: y: if x > y then x else y;
    mod = base: int: base - (int * (builtins.div base int));
    compare = a: b: if a < b then -1 else if a > b then 1 else 0;
    lessThan = builtins.lessThan;
    inherit (builtins) seq deepSeq isFunction functionArgs;
    version = "26.05pre-stub";
    release = "26.05";
    codeName = "stub";
    oldestSupportedRelease = 2505;
    isInOldestRelease = release: release <= oldestSupportedRelease;
    inPureEvalMode = !(builtins ? currentSystem);
    warn = msg: builtins.trace "[1;31mevaluation warning:[0m ${msg}";
    warnIf = cond: msg: if cond then warn msg else x: x;
    warnIfNot = cond: msg: if cond then x: x else warn msg;
    throwIf = cond: msg: if cond then throw msg else x: x;
    throwIfNot = cond: msg: if cond then x: x else throw msg;
    info = msg: builtins.trace "INFO: ${msg}";
    importJSON = path: builtins.fromJSON (builtins.readFile path);
    importTOML = path: builtins.fromTOML (builtins.readFile path);
    toFunction = v: if isFunction v then v else _: v;
    setFunctionArgs = f: args: {
      __functor = self: f;
      __functionArgs = args;
    };
    mirrorFunctionArgs = f: g: setFunctionArgs g (builtins.functionArgs f);
    toHexString =
      i:
      let
        digits = lists.toBaseDigits 16 i;
        toHex = d: elemAt (strings.stringToCharacters "0123456789ABCDEF") d;
      in
      strings.concatMapStrings toHex digits;
    toBaseDigits = lists.toBaseDigits;
  };

  # -- lists (lib/lists.nix) ----------------------------------------------------------------
  lists = rec {
    inherit (builtins)
      length
      head
      tail
      elem
      elemAt
      filter
      genList
      concatLists
      concatMap
      foldl'
      sort
      any
      all
      partition
      ;
    singleton = x: [ x ];
    forEach = xs: f: map f xs;
    foldr =
      op: nul: list:
      let
        len = length list;
        fold' = n: if n == len then nul else op (elemAt list n) (fold' (n + 1));
      in
      fold' 0;
    fold = foldr;
    foldl =
      op: nul: list:
      let
        foldl' = n: if n == -1 then nul else op (foldl' (n - 1)) (elemAt list n);
      in
      foldl' (length list - 1);
    imap0 = f: list: genList (n: f n (elemAt list n)) (length list);
    imap1 = f: list: genList (n: f (n + 1) (elemAt list n)) (length list);
    ifilter0 =
      ipred: input:
      map (idx: elemAt input idx) (
        filter (idx: ipred idx (elemAt input idx)) (genList (x: x) (length input))
      );
    flatten = x: if isList x then concatMap flatten x else [ x ];
    remove = e: filter (x: x != e);
    findSingle =
      pred: default: multiple: list:
      let
        found = filter pred list;
        len = length found;
      in
      if len == 0 then
        default
      else if len != 1 then
        multiple
      else
        head found;
    findFirstIndex =
      pred: default: list:
      let
        resultIndex = foldl' (
          index: el: if index < 0 then if pred el then -index - 1 else index - 1 else index
        ) (-1) list;
      in
      if resultIndex < 0 then default else resultIndex;
    findFirst =
      pred: default: list:
      let
        index = findFirstIndex pred null list;
      in
      if index == null then default else elemAt list index;
    count = pred: foldl' (c: x: if pred x then c + 1 else c) 0;
    optional = cond: elem: if cond then [ elem ] else [ ];
    optionals = cond: elems: if cond then elems else [ ];
    toList = x: if isList x then x else [ x ];
    range = first: last: if first > last then [ ] else genList (n: first + n) (last - first + 1);
    replicate = n: elem: genList (_: elem) n;
    groupBy' =
      op: nul: pred: lst:
      attrsets.mapAttrs (_: foldl' op nul) (groupBy pred lst);
    groupBy =
      pred:
      foldl' (
        r: e:
        let
          key = pred e;
        in
        r // { ${key} = (r.${key} or [ ]) ++ [ e ]; }
      ) { };
    zipListsWith =
      f: fst: snd:
      genList (n: f (elemAt fst n) (elemAt snd n)) (trivial.min (length fst) (length snd));
    zipLists = zipListsWith (fst: snd: { inherit fst snd; });
    reverseList =
      xs:
      let
        l = length xs;
      in
      genList (n: elemAt xs (l - n - 1)) l;
    sortOn =
      f: list:
      map (x: x.v) (
        sort (a: b: a.k < b.k) (
          map (v: {
            inherit v;
            k = f v;
          }) list
        )
      );
    compareLists =
      cmp: a: b:
      if a == [ ] then
        if b == [ ] then 0 else -1
      else if b == [ ] then
        1
      else
        let
          rel = cmp (head a) (head b);
        in
        if rel == 0 then compareLists cmp (tail a) (tail b) else rel;
    naturalSort = sort (a: b: a < b);
    take = count: sublist 0 count;
    drop = count: list: sublist count (length list) list;
    takeEnd = n: xs: drop (trivial.max 0 (length xs - n)) xs;
    dropEnd = n: xs: take (trivial.max 0 (length xs - n)) xs;
    hasPrefix = list1: list2: take (length list1) list2 == list1;
    removePrefix =
      list1: list2:
      if hasPrefix list1 list2 then
        drop (length list1) list2
      else
        throw "lib.lists.removePrefix: First argument is not a list prefix of the second argument";
    sublist =
      start: count: list:
      let
        len = length list;
      in
      genList (n: elemAt list (n + start)) (
        if start >= len then
          0
        else if start + count > len then
          len - start
        else
          count
      );
    commonPrefix =
      list1: list2:
      let
        commonPrefixLength = findFirstIndex (i: elemAt list1 i != elemAt list2 i) (trivial.min (
          length list1
        ) (length list2)) (range 0 (trivial.min (length list1) (length list2) - 1));
      in
      take commonPrefixLength list1;
    last =
      list:
      assert if list != [ ] then true else throw "lists.last: list must not be empty!";
      elemAt list (length list - 1);
    init =
      list:
      assert if list != [ ] then true else throw "lists.init: list must not be empty!";
      take (length list - 1) list;
    crossLists = f: foldl (fs: args: concatMap (f: map f args) fs) [ f ];
    cartesianProduct =
      attrsOfLists:
      foldl' (
        listOfAttrs: attrName:
        concatMap (
          attrs: map (listValue: attrs // { ${attrName} = listValue; }) attrsOfLists.${attrName}
        ) listOfAttrs
      ) [ { } ] (attrNames attrsOfLists);
    mapCartesianProduct = f: attrsOfLists: map f (cartesianProduct attrsOfLists);
    unique = foldl' (acc: e: if builtins.elem e acc then acc else acc ++ [ e ]) [ ];
    allUnique = list: (length (unique list) == length list);
    uniqueStrings = list: attrNames (listToAttrs (map (name: { inherit name; value = null; }) list));
    intersectLists = e: filter (x: builtins.elem x e);
    subtractLists = e: filter (x: !(builtins.elem x e));
    mutuallyExclusive = a: b: a == [ ] || !(any (x: builtins.elem x a) b);
    listDfs = throw "lib.lists.listDfs: not provided by the stub nixpkgs";
    toBaseDigits =
      base: i:
      let
        go =
          i:
          if i < base then
            [ i ]
          else
            let
              r = i - ((i / base) * base);
              q = (i - r) / base;
            in
            [ r ] ++ go q;
      in
      assert (isInt base);
      assert (isInt i);
      assert (base >= 2);
      assert (i >= 0);
      reverseList (go i);
    concatMapStrings = strings.concatMapStrings;
  };

  # -- strings (lib/strings.nix) ------------------------------------------------------------
  strings = rec {
    inherit (builtins)
      stringLength
      substring
      head
      tail
      isString
      replaceStrings
      toString
      match
      split
      ;
    concatStrings = builtins.concatStringsSep "";
    concatStringsSep = builtins.concatStringsSep;
    concatMapStrings = f: list: concatStrings (map f list);
    concatImapStrings = f: list: concatStrings (lists.imap1 f list);
    concatMapStringsSep =
      sep: f: list:
      concatStringsSep sep (map f list);
    concatImapStringsSep =
      sep: f: list:
      concatStringsSep sep (lists.imap1 f list);
    concatLines = list: concatMapStrings (s: s + "\n") list;
    intersperse =
      separator: list:
      if list == [ ] || length list == 1 then
        list
      else
        tail (lists.concatMap (x: [ separator x ]) list);
    makeSearchPath =
      subDir: paths: concatStringsSep ":" (map (path: path + "/" + subDir) (filter (x: x != null) paths));
    makeSearchPathOutput =
      output: subDir: pkgs:
      makeSearchPath subDir (map (attrsets.getOutput output) pkgs);
    makeLibraryPath = makeSearchPathOutput "lib" "lib";
    makeIncludePath = makeSearchPathOutput "dev" "include";
    makeBinPath = makeSearchPathOutput "bin" "bin";
    optionalString = cond: string: if cond then string else "";
    hasPrefix = pref: str: substring 0 (stringLength pref) str == pref;
    hasSuffix =
      suffix: content:
      let
        lenContent = stringLength content;
        lenSuffix = stringLength suffix;
      in
      lenContent >= lenSuffix && substring (lenContent - lenSuffix) lenContent content == suffix;
    hasInfix = infix: content: builtins.match ".*${escapeRegex infix}.*" "${content}" != null;
    stringToCharacters = s: genList (p: substring p 1 s) (stringLength s);
    stringAsChars = f: s: concatStrings (map f (stringToCharacters s));
    escape = list: replaceStrings list (map (c: "\\${c}") list);
    escapeRegex = escape (stringToCharacters "\\[{()^$?*+|.");
    escapeShellArg =
      arg:
      let
        string = toString arg;
      in
      if match "[[:alnum:],._+:@%/-]+" string == null then
        "'${replaceStrings [ "'" ] [ "'\\''" ] string}'"
      else
        string;
    escapeShellArgs = concatMapStringsSep " " escapeShellArg;
    escapeNixString = s: escape [ "$" ] (builtins.toJSON s);
    toShellVar =
      name: value:
      if isAttrs value && !isStringLike value then
        "declare -A ${name}=(${
          concatStringsSep " " (attrsets.mapAttrsToList (n: v: "[${escapeShellArg n}]=${escapeShellArg v}") value)
        })"
      else if isList value then
        "declare -a ${name}=(${escapeShellArgs value})"
      else
        "${name}=${escapeShellArg value}";
    toShellVars = vars: concatStringsSep "\n" (attrsets.mapAttrsToList toShellVar vars);
    toUpper = replaceStrings lowerChars upperChars;
    toLower = replaceStrings upperChars lowerChars;
    lowerChars = stringToCharacters "abcdefghijklmnopqrstuvwxyz";
    upperChars = stringToCharacters "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    toSentenceCase =
      str:
      let
        firstChar = substring 0 1 str;
        rest = substring 1 (stringLength str) str;
      in
      toUpper firstChar + toLower rest;
    addContextFrom = src: target: substring 0 0 src + target;
    splitString =
      sep: s:
      let
        splits = builtins.filter builtins.isString (
          builtins.split (escapeRegex (toString sep)) (toString s)
        );
      in
      map (addContextFrom s) splits;
    removePrefix =
      prefix: str:
      let
        preLen = stringLength prefix;
      in
      if substring 0 preLen str == prefix then substring preLen (-1) str else str;
    removeSuffix =
      suffix: str:
      let
        sufLen = stringLength suffix;
        sLen = stringLength str;
      in
      if sufLen <= sLen && suffix == substring (sLen - sufLen) sufLen str then
        substring 0 (sLen - sufLen) str
      else
        str;
    versionOlder = v1: v2: builtins.compareVersions v2 v1 == 1;
    versionAtLeast = v1: v2: !versionOlder v1 v2;
    getName =
      x:
      let
        parse = drv: (builtins.parseDrvName drv).name;
      in
      if isString x then parse x else x.pname or (parse x.name);
    getVersion =
      x:
      let
        parse = drv: (builtins.parseDrvName drv).version;
      in
      if isString x then parse x else x.version or (parse x.name);
    trim = trimWith {
      start = true;
      end = true;
    };
    trimWith =
      {
        start ? false,
        end ? false,
      }:
      s:
      let
        chars = " \t\r\n";
        regex =
          if start && end then
            "[${chars}]*(.*[^${chars}])[${chars}]*"
          else if start then
            "[${chars}]*(.*)"
          else if end then
            "(.*[^${chars}])[${chars}]*"
          else
            "(.*)";
        res = match regex s;
      in
      if res == null then "" else head res;
    fixedWidthString =
      width: filler: str:
      let
        strw = stringLength str;
        reqWidth = width - (stringLength filler);
      in
      assert strw <= width;
      if strw == width then str else filler + fixedWidthString reqWidth filler str;
    fixedWidthNumber = width: n: fixedWidthString width "0" (toString n);
    isStringLike = x: isString x || isPath x || x ? outPath || x ? __toString;
    isStorePath =
      x:
      if isStringLike x then
        let
          str = toString x;
        in
        substring 0 1 str == "/"
        && (
          dirOf str == builtins.storeDir
          || builtins.match "${builtins.storeDir}/[^/]+" str != null
        )
      else
        false;
    toInt =
      str:
      let
        m = match "[[:space:]]*(-?[[:digit:]]+)[[:space:]]*" str;
      in
      if m == null then
        throw "Could not convert ${str} to int."
      else
        builtins.fromJSON (
          let
            s = head m;
            stripped = match "(-?)0*([[:digit:]]+)" s;
          in
          concatStrings stripped
        );
    toIntBase10 = toInt;
    sanitizeDerivationName =
      string:
      let
        okRegex = match "[[:alnum:]+_?=-][[:alnum:]+._?=-]*";
      in
      if okRegex string != null && stringLength string <= 207 then
        string
      else
        let
          noDots = let m = match "\\.*(.*)" string; in head m;
          parts = split "[^[:alnum:]+._?=-]+" noDots;
          joined = concatMapStrings (p: if isList p then "-" else p) parts;
          cut = substring (trivial.max 0 (stringLength joined - 207)) (-1) joined;
        in
        if cut == "" then "unknown" else cut;
    levenshtein =
      a: b:
      let
        as = stringToCharacters a;
        bs = stringToCharacters b;
        lb = length bs;
        step =
          prevRow: i:
          let
            ca = elemAt as (i - 1);
          in
          foldl' (
            row: j:
            row
            ++ [
              (trivial.min (trivial.min (elemAt prevRow j + 1) (lists.last row + 1)) (
                elemAt prevRow (j - 1) + (if ca == elemAt bs (j - 1) then 0 else 1)
              ))
            ]
          ) [ i ] (lists.range 1 lb);
        final = foldl' step (lists.range 0 lb) (lists.range 1 (length as));
      in
      lists.last final;
    levenshteinAtMost =
      k: a: b:
      let
        d = stringLength a - stringLength b;
      in
      (if d < 0 then -d else d) <= k && levenshtein a b <= k;
    cmakeOptionType =
      type: feature: value:
      assert (
        builtins.elem (toUpper type) [
          "BOOL"
          "FILEPATH"
          "PATH"
          "STRING"
          "INTERNAL"
        ]
      );
      "-D${feature}:${toUpper type}=${value}";
    cmakeBool = condition: flag: cmakeOptionType "bool" condition (toUpper (trivial.boolToString flag));
    cmakeFeature = feature: value: cmakeOptionType "string" feature value;
    mesonOption = feature: value: "-D${feature}=${value}";
    mesonBool = condition: flag: mesonOption condition (trivial.boolToString flag);
    mesonEnable = feature: flag: mesonOption feature (if flag then "enabled" else "disabled");
    enableFeature = flag: feature: "--${if flag then "enable" else "disable"}-${feature}";
    withFeature = flag: feature: "--${if flag then "with" else "without"}-${feature}";
    versions = lib.versions;
  };

  # -- attrsets (lib/attrsets.nix) ----------------------------------------------------------
  attrsets = rec {
    inherit (builtins)
      attrNames
      attrValues
      catAttrs
      getAttr
      hasAttr
      intersectAttrs
      listToAttrs
      mapAttrs
      removeAttrs
      ;
    attrByPath =
      attrPath: default: set:
      let
        lenAttrPath = length attrPath;
        attrByPath' =
          n: s:
          (
            if n == lenAttrPath then
              s
            else
              (
                let
                  attr = elemAt attrPath n;
                in
                if s ? ${attr} then attrByPath' (n + 1) s.${attr} else default
              )
          );
      in
      attrByPath' 0 set;
    hasAttrByPath =
      attrPath: e:
      let
        lenAttrPath = length attrPath;
        hasAttrByPath' =
          n: s:
          (
            n == lenAttrPath
            || (
              let
                attr = elemAt attrPath n;
              in
              if s ? ${attr} then hasAttrByPath' (n + 1) s.${attr} else false
            )
          );
      in
      hasAttrByPath' 0 e;
    setAttrByPath =
      attrPath: value:
      let
        len = length attrPath;
        atDepth = n: if n == len then value else { ${elemAt attrPath n} = atDepth (n + 1); };
      in
      atDepth 0;
    getAttrFromPath =
      attrPath: set:
      attrByPath attrPath (abort ("cannot find attribute '" + concatStringsSep "." attrPath + "'")) set;
    concatStringsSep = builtins.concatStringsSep;
    attrVals = nameList: set: map (x: set.${x}) nameList;
    getAttrs = names: attrs: genAttrs names (name: attrs.${name});
    filterAttrs =
      pred: set:
      listToAttrs (
        concatMap (
          name:
          let
            v = set.${name};
          in
          if pred name v then [ (nameValuePair name v) ] else [ ]
        ) (attrNames set)
      );
    filterAttrsRecursive =
      pred: set:
      listToAttrs (
        concatMap (
          name:
          let
            v = set.${name};
          in
          if pred name v then
            [ (nameValuePair name (if isAttrs v then filterAttrsRecursive pred v else v)) ]
          else
            [ ]
        ) (attrNames set)
      );
    foldlAttrs =
      f: init: set:
      foldl' (acc: name: f acc name set.${name}) init (attrNames set);
    foldAttrs =
      op: nul: list_of_attrs:
      lists.foldr (
        n: a: lists.foldr (name: o: o // { ${name} = op n.${name} (a.${name} or nul); }) a (attrNames n)
      ) { } list_of_attrs;
    nameValuePair = name: value: { inherit name value; };
    mapAttrs' = f: set: listToAttrs (map (attr: f attr set.${attr}) (attrNames set));
    mapAttrsToList = f: attrs: map (name: f name attrs.${name}) (attrNames attrs);
    attrsToList = mapAttrsToList nameValuePair;
    mapAttrsRecursive = f: set: mapAttrsRecursiveCond (as: true) f set;
    mapAttrsRecursiveCond =
      cond: f: set:
      let
        recurse =
          path:
          builtins.mapAttrs (
            name: value:
            if isAttrs value && cond value then recurse (path ++ [ name ]) value else f (path ++ [ name ]) value
          );
      in
      recurse [ ] set;
    concatMapAttrs = f: v: foldl' (a: b: a // b) { } (attrValues (builtins.mapAttrs f v));
    genAttrs = names: f: listToAttrs (map (n: nameValuePair n (f n)) names);
    genAttrs' = xs: f: listToAttrs (map f xs);
    isDerivation = value: value.type or null == "derivation";
    toDerivation =
      path:
      let
        path' = builtins.storePath path;
      in
      {
        type = "derivation";
        name = builtins.unsafeDiscardStringContext (builtins.substring 33 (-1) (baseNameOf path'));
        outPath = path';
        outputs = [ "out" ];
        out = path';
        outputName = "out";
      };
    optionalAttrs = cond: as: if cond then as else { };
    zipAttrsWithNames =
      names: f: sets:
      listToAttrs (
        map (name: {
          inherit name;
          value = f name (catAttrs name sets);
        }) names
      );
    zipAttrsWith =
      f: sets: zipAttrsWithNames (lists.unique (concatMap attrNames sets)) f sets;
    zipAttrs = zipAttrsWith (name: values: values);
    mergeAttrsList = list: foldl' (a: b: a // b) { } list;
    recursiveUpdateUntil =
      pred: lhs: rhs:
      let
        f =
          attrPath:
          zipAttrsWith (
            n: values:
            let
              here = attrPath ++ [ n ];
            in
            if length values == 1 || pred here (elemAt values 1) (head values) then
              head values
            else
              f here values
          );
      in
      f [ ] [
        rhs
        lhs
      ];
    recursiveUpdate =
      lhs: rhs:
      recursiveUpdateUntil (
        path: lhs: rhs:
        !(isAttrs lhs && isAttrs rhs)
      ) lhs rhs;
    matchAttrs =
      pattern: attrs:
      builtins.all (
        attr:
        attrs ? ${attr}
        && (
          let
            lhs = pattern.${attr};
            rhs = attrs.${attr};
          in
          if isAttrs lhs then isAttrs rhs && matchAttrs lhs rhs else lhs == rhs
        )
      ) (attrNames pattern);
    overrideExisting = old: new: builtins.mapAttrs (name: value: new.${name} or value) old;
    getOutput =
      output: pkg:
      if !pkg ? outputSpecified || !pkg.outputSpecified then pkg.${output} or pkg.out or pkg else pkg;
    getFirstOutput =
      candidates: pkg:
      let
        outputs = builtins.filter (name: hasAttr name pkg) candidates;
        output = builtins.head outputs;
      in
      if pkg.outputSpecified or false || outputs == [ ] then pkg else pkg.${output};
    getBin = getOutput "bin";
    getLib = getOutput "lib";
    getStatic = getFirstOutput [
      "static"
      "lib"
      "out"
    ];
    getDev = getOutput "dev";
    getInclude = getFirstOutput [
      "include"
      "dev"
      "out"
    ];
    getMan = getOutput "man";
    chooseDevOutputs = map getDev;
    recurseIntoAttrs = attrs: attrs // { recurseForDerivations = true; };
    dontRecurseIntoAttrs = attrs: attrs // { recurseForDerivations = false; };
    unionOfDisjoint =
      x: y:
      let
        intersection = builtins.intersectAttrs x y;
        collisions = concatStringsSep " " (attrNames intersection);
        mask = builtins.mapAttrs (
          name: value: throw "unionOfDisjoint: collision on ${name}; complete list: ${collisions}"
        ) intersection;
      in
      (x // y) // mask;
    collect =
      pred: attrs:
      if pred attrs then
        [ attrs ]
      else if isAttrs attrs then
        concatMap (collect pred) (attrValues attrs)
      else
        [ ];
    cartesianProduct = lists.cartesianProduct;
    mapCartesianProduct = lists.mapCartesianProduct;
  };

  # -- fixedPoints (lib/fixed-points.nix) ---------------------------------------------------
  fixedPoints = rec {
    fix =
      f:
      let
        x = f x;
      in
      x;
    fix' =
      f:
      let
        x = f x // {
          __unfix__ = f;
        };
      in
      x;
    extends =
      overlay: f:
      (
        final:
        let
          prev = f final;
        in
        prev // overlay final prev
      );
    composeExtensions =
      f: g: final: prev:
      let
        fApplied = f final prev;
        prev' = prev // fApplied;
      in
      fApplied // g final prev';
    composeManyExtensions = lists.foldr (x: y: composeExtensions x y) (final: prev: { });
    makeExtensible = makeExtensibleWithCustomName "extend";
    makeExtensibleWithCustomName =
      extenderName: rattrs:
      fix' (
        self:
        (rattrs self)
        // {
          ${extenderName} = f: makeExtensibleWithCustomName extenderName (extends f rattrs);
        }
      );
    toExtension =
      f:
      if isFunction f then
        final: prev:
        let
          fPrev = f prev;
        in
        if isFunction fPrev then f final prev else fPrev
      else
        final: prev: f;
  };

  # -- customisation (lib/customisation.nix) ------------------------------------------------
  customisation = rec {
    # Real: adds `override` (and `overrideDerivation`) to the result of `f origArgs`.
    makeOverridable =
      f:
      let
        mirrorArgs = trivial.mirrorFunctionArgs f;
      in
      mirrorArgs (
        origArgs:
        let
          result = f origArgs;
          overrideWith = newArgs: origArgs // (if isFunction newArgs then newArgs origArgs else newArgs);
          overrideResult = g: makeOverridable (mirrorArgs (args: g (f args))) origArgs;
        in
        if isAttrs result then
          result
          // {
            override = mirrorArgs (newArgs: makeOverridable f (overrideWith newArgs));
            overrideDerivation = fdrv: overrideResult (x: overrideDerivation x fdrv);
            ${if result ? overrideAttrs then "overrideAttrs" else null} =
              fdrv: overrideResult (x: x.overrideAttrs fdrv);
          }
        else if isFunction result then
          {
            __functor = self: result;
            override = newArgs: makeOverridable f (overrideWith newArgs);
          }
        else
          result
      );
    overrideDerivation =
      drv: f:
      throw "lib.overrideDerivation: not provided by the stub nixpkgs (use overrideAttrs)";

    # Copied from lib/customisation.nix: the message, the suggestions and `abort` are the same.
    callPackageWith =
      autoArgs: fn: args:
      let
        f = if isFunction fn then fn else import fn;
        fargs = builtins.functionArgs f;
        allArgs = intersectAttrs fargs autoArgs // args;
        missingArgs = attrsets.filterAttrs (name: value: !value) (removeAttrs fargs (attrNames allArgs));
        getSuggestions =
          arg:
          trivial.pipe (autoArgs // args) [
            attrNames
            (filter (strings.levenshteinAtMost 2 arg))
            (lists.sortOn (strings.levenshtein arg))
            (lists.take 3)
            (map (x: "\"" + x + "\""))
          ];
        prettySuggestions =
          suggestions:
          if suggestions == [ ] then
            ""
          else if length suggestions == 1 then
            ", did you mean ${elemAt suggestions 0}?"
          else
            ", did you mean ${concatStringsSep ", " (lists.init suggestions)} or ${lists.last suggestions}?";
        errorForArg =
          arg:
          let
            loc = builtins.unsafeGetAttrPos arg fargs;
            loc' =
              if loc != null then
                loc.file + ":" + toString loc.line
              else if !isFunction fn then
                toString fn + strings.optionalString (filesystem.pathIsDirectory fn) "/default.nix"
              else
                "<unknown location>";
          in
          "Function called without required argument \"${arg}\" at "
          + "${loc'}${prettySuggestions (getSuggestions arg)}";
        error = errorForArg (head (attrNames missingArgs));
      in
      if missingArgs == { } then
        makeOverridable f allArgs
      else
        abort "lib.customisation.callPackageWith: ${error}";

    callPackagesWith =
      autoArgs: fn: args:
      let
        f = if isFunction fn then fn else import fn;
        auto = intersectAttrs (builtins.functionArgs f) autoArgs;
      in
      f (auto // args);

    extendDerivation =
      condition: passthru: drv:
      let
        outputs = drv.outputs or [ "out" ];
        commonAttrs =
          drv // (listToAttrs outputsList) // { all = map (x: x.value) outputsList; } // passthru;
        outputToAttrListElement = outputName: {
          name = outputName;
          value =
            commonAttrs
            // {
              inherit (drv.${outputName}) type outputName;
              outputSpecified = true;
              drvPath =
                assert condition;
                drv.${outputName}.drvPath;
              outPath =
                assert condition;
                drv.${outputName}.outPath;
            };
        };
        outputsList = map outputToAttrListElement outputs;
      in
      commonAttrs
      // {
        drvPath =
          assert condition;
          drv.drvPath;
        outPath =
          assert condition;
          drv.outPath;
      };

    makeScope =
      newScope: f:
      let
        self = f self // {
          newScope = scope: newScope (self // scope);
          callPackage = self.newScope { };
          overrideScope = g: makeScope newScope (fixedPoints.extends g f);
          packages = f;
        };
      in
      self;

    makeScopeWithSplicing = throw "lib.makeScopeWithSplicing: not provided by the stub nixpkgs";
  };

  # -- versions (lib/versions.nix) ----------------------------------------------------------
  versions = rec {
    splitVersion = builtins.splitVersion;
    major = v: builtins.elemAt (splitVersion v) 0;
    minor = v: builtins.elemAt (splitVersion v) 1;
    patch = v: builtins.elemAt (splitVersion v) 2;
    majorMinor =
      v:
      builtins.concatStringsSep "." (
        lists.take 2 (splitVersion v)
      );
    pad =
      n: version:
      let
        numericVersion = lists.head (strings.splitString "-" version);
        versionSuffix = strings.removePrefix numericVersion version;
      in
      builtins.concatStringsSep "." (
        lists.take n (splitVersion numericVersion ++ lists.genList (_: "0") n)
      )
      + versionSuffix;
  };

  # -- asserts (lib/asserts.nix) ------------------------------------------------------------
  asserts = rec {
    assertMsg = pred: msg: pred || builtins.throw msg;
    assertOneOf =
      name: val: xs:
      assertMsg (builtins.elem val xs) "${name} must be one of ${generators.toPretty { } xs}, but is: ${
        generators.toPretty { } val
      }";
    assertEachOneOf =
      name: vals: xs:
      assertMsg (builtins.all (val: builtins.elem val xs) vals) "each element in ${name} must be one of ${
        generators.toPretty { } xs
      }, but is: ${generators.toPretty { } vals}";
  };

  # -- meta (lib/meta.nix) ------------------------------------------------------------------
  meta = rec {
    addMetaAttrs = newAttrs: drv: drv // { meta = (drv.meta or { }) // newAttrs; };
    dontDistribute = drv: addMetaAttrs { hydraPlatforms = [ ]; } drv;
    setName = name: drv: drv // { inherit name; };
    updateName = updater: drv: drv // { name = updater (drv.name); };
    setPrio = priority: addMetaAttrs { inherit priority; };
    lowPrio = setPrio 10;
    hiPrio = setPrio (-10);
    platformMatch =
      platform: elem:
      if isString elem then platform ? system && elem == platform.system else attrsets.matchAttrs elem platform;
    availableOn =
      platform: pkg:
      ((!pkg ? meta.platforms) || builtins.any (platformMatch platform) pkg.meta.platforms)
      && builtins.all (elem: !platformMatch platform elem) (pkg.meta.badPlatforms or [ ]);
    getLicenseFromSpdxId =
      licstr:
      getLicenseFromSpdxIdOr licstr (
        builtins.trace "warning: getLicenseFromSpdxId: No license matches the given SPDX ID: ${licstr}" {
          shortName = licstr;
        }
      );
    getLicenseFromSpdxIdOr =
      let
        bySpdx = listToAttrs (
          concatMap (
            l: if l ? spdxId then [ (attrsets.nameValuePair (strings.toLower l.spdxId) l) ] else [ ]
          ) (attrValues lib.licenses)
        );
      in
      licstr: default: bySpdx.${strings.toLower licstr} or default;
    getExe =
      x:
      getExe' x (
        x.meta.mainProgram or (trivial.warn
          "getExe: Package ${strings.escapeNixString x.name or x.pname or "<unknown>"} does not have the meta.mainProgram attribute. We'll assume that the main program has the same name for now, but this behavior is deprecated, because it leads to surprising errors when the assumption does not hold. If the package has a main program, please set `meta.mainProgram` in its definition to make this warning go away. Otherwise, if the package does not have a main program, or if you don't control its definition, use getExe' to specify the name to the program, such as lib.getExe' foo \"bar\"."
          (strings.getName x)
        )
      );
    getExe' =
      x: y:
      assert asserts.assertMsg (attrsets.isDerivation x) "lib.meta.getExe': The first argument is of type ${typeOf x}, but it should be a derivation instead.";
      assert asserts.assertMsg (isString y) "lib.meta.getExe': The second argument is of type ${typeOf y}, but it should be a string instead.";
      assert asserts.assertMsg (match ".*/.*" y == null) "lib.meta.getExe': The second argument \"${y}\" is a nested path with a \"/\" character, but it should just be the name of the executable instead.";
      "${attrsets.getBin x}/bin/${y}";
  };

  # -- filesystem / path / sources ----------------------------------------------------------
  filesystem = rec {
    # Nix 2.8 has no builtins.readFileType: ask the parent directory.
    pathType =
      path:
      if !builtins.pathExists path then
        throw "lib.filesystem.pathType: Path ${toString path} does not exist."
      else if toString path == "/" then
        "directory"
      else if dirOf (toString path) == builtins.storeDir then
        # Pure evaluation may not list the store itself (a flake's ./. is a store path).
        if builtins.pathExists (toString path + "/.") then "directory" else "regular"
      else
        (builtins.readDir (dirOf path)).${baseNameOf path};
    pathIsDirectory = path: builtins.pathExists path && pathType path == "directory";
    pathIsRegularFile = path: builtins.pathExists path && pathType path == "regular";
    listFilesRecursive =
      dir:
      lists.flatten (
        attrsets.mapAttrsToList (
          name: type: if type == "directory" then listFilesRecursive (dir + "/${name}") else dir + "/${name}"
        ) (builtins.readDir dir)
      );
  };

  path = rec {
    append =
      path: subpath:
      assert asserts.assertMsg (isPath path) "lib.path.append: The first argument is of type ${typeOf path}, but a path was expected";
      path + ("/" + subpath);
    hasPrefix = prefix: p: strings.hasPrefix (toString prefix + "/") (toString p + "/");
  };

  sources = rec {
    cleanSourceFilter =
      name: type:
      let
        baseName = baseNameOf (toString name);
      in
      !(
        (type == "directory" && (baseName == ".git" || baseName == ".svn" || baseName == "CVS"))
        || strings.hasSuffix "~" baseName
        || match "^\\.sw[a-z]$" baseName != null
        || match "^\\..*\\.sw[a-z]$" baseName != null
        || strings.hasSuffix ".o" baseName
        || strings.hasSuffix ".so" baseName
        || (type == "symlink" && strings.hasPrefix "result" baseName)
        || (type == "unknown")
      );
    cleanSourceWith =
      {
        src,
        filter ? _path: _type: true,
        name ? null,
      }:
      let
        orig = toSourceAttributes src;
      in
      fromSourceAttributes {
        inherit (orig) origSrc;
        filter = path: type: filter path type && orig.filter path type;
        name = if name != null then name else orig.name;
      };
    cleanSource = src: cleanSourceWith {
      filter = cleanSourceFilter;
      inherit src;
    };
    sourceByRegex =
      src: regexes:
      let
        isFiltered = src ? _isLibCleanSourceWith;
        origSrc = if isFiltered then src.origSrc else src;
      in
      cleanSourceWith {
        filter = (
          path: type:
          let
            relPath = strings.removePrefix (toString origSrc + "/") (toString path);
          in
          builtins.any (re: match re relPath != null) regexes
        );
        inherit src;
      };
    sourceFilesBySuffices =
      src: exts:
      let
        filter =
          name: type:
          let
            base = baseNameOf (toString name);
          in
          type == "directory" || builtins.any (ext: strings.hasSuffix ext base) exts;
      in
      cleanSourceWith { inherit filter src; };
    toSourceAttributes =
      src:
      if src ? _isLibCleanSourceWith then
        {
          inherit (src) origSrc filter name;
        }
      else
        {
          origSrc = src;
          filter = _: _: true;
          name = "source";
        };
    fromSourceAttributes =
      {
        origSrc,
        filter,
        name,
      }:
      {
        _isLibCleanSourceWith = true;
        inherit origSrc filter name;
        outPath = builtins.path {
          inherit filter name;
          path = origSrc;
        };
      };
  };

  # -- generators (only toPretty, as used in nixpkgs error messages) ------------------------
  generators = rec {
    toPretty =
      { ... }:
      v:
      if attrsets.isDerivation v then
        "<derivation ${v.name or "???"}>"
      else if isString v then
        builtins.toJSON v
      else if isInt v || builtins.isFloat v then
        toString v
      else if isBool v then
        trivial.boolToString v
      else if v == null then
        "null"
      else if isPath v then
        toString v
      else if isList v then
        if v == [ ] then "[ ]" else "[ ${concatStringsSep " " (map (toPretty { }) v)} ]"
      else if isFunction v then
        "<function>"
      else if isAttrs v then
        if v == { } then
          "{ }"
        else
          "{ ${concatStringsSep " " (attrsets.mapAttrsToList (n: x: "${n} = ${toPretty { } x};") v)} }"
      else
        "<${typeOf v}>";
  };

  concatStringsSep = builtins.concatStringsSep;

  # Names every nixpkgs user reaches as `lib.<name>` (lib/default.nix `inherit`s them).
  flat =
    builtins.removeAttrs trivial [
      "version"
      "release"
      "codeName"
    ]
    // lists
    // strings
    // attrsets
    // fixedPoints
    // customisation
    // asserts
    // meta
    // sources
    // {
      inherit (builtins)
        isAttrs
        isList
        isString
        isInt
        isBool
        isFloat
        isPath
        typeOf
        readFile
        readDir
        pathExists
        toJSON
        fromJSON
        fromTOML
        toFile
        ;
      isFunction = builtins.isFunction;
      fakeHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
      fakeSha256 = "0000000000000000000000000000000000000000000000000000";
      inherit (trivial) version release codeName;
      inherit (strings) concatStringsSep;
      inherit (filesystem) pathType pathIsDirectory pathIsRegularFile;
      inherit (generators) toPretty;
      # lib.extendMkDerivation (lib/customisation.nix): build a mkDerivation-like function.
      extendMkDerivation =
        {
          constructDrv,
          excludeDrvArgNames ? [ ],
          extendDrvArgs,
          inheritFunctionArgs ? true,
          transformDrv ? trivial.id,
        }:
        fpargs:
        transformDrv (
          constructDrv (
            finalAttrs:
            let
              args = trivial.toFunction fpargs finalAttrs;
            in
            builtins.removeAttrs args excludeDrvArgNames // extendDrvArgs finalAttrs args
          )
        );
    };
in
lib
