"""Move a built variant's Python package into `<id>.zip` (the "zip" build layout).

Usage: zip_layout.py VARIANT_DIR ID

Every regular file of VARIANT_DIR but `metadata.json`, its signature and the native
extension modules (which Python cannot import from an archive) goes into VARIANT_DIR/ID.zip,
by its path relative to VARIANT_DIR, in sorted order, each with the earliest date a ZIP
entry holds and mode 0644, so the archive is the same bytes on every build; the files are
then removed.
The `kernels` client (0.19 and later) imports the package from the archive, and the
extension modules from the variant directory beside it.
"""

import os
import sys
import zipfile

KEEP = {"metadata.json", "metadata.json.sigstore"}
NATIVE = (".so", ".pyd", ".dylib")


def main(root: str, ident: str) -> None:
    archive = os.path.join(root, f"{ident}.zip")
    members = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel in KEEP or rel == f"{ident}.zip" or rel.endswith(NATIVE):
                continue
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            members.append(rel)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for rel in sorted(members):
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(os.path.join(root, rel), "rb") as source:
                out.writestr(info, source.read())
    for rel in members:
        os.remove(os.path.join(root, rel))
    for folder, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if folder != root and not os.listdir(folder):
            os.rmdir(folder)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
