"""What a variant's `metadata.json` says beyond build.toml's values: the oldest `kernels`
client that can load it (`kernels-minver`), derived from what the build uses, never
written by hand (as the field's builder derives it: the `kernels` client's
`Build::required_kernels_version` and `Metadata::set_kernel_layout_to_zip`)."""

from __future__ import annotations

from nixgen.core import tables
from nixgen.reading import model

#: The oldest client that loads a kernel in the current metadata format.
BASELINE = "0.14.0"
#: The first client that fetches a kernel's `kernel-depends`.
KERNEL_DEPENDS = "0.17.0"
#: The first client that imports a variant's package from `<id>.zip`.
ZIP_LAYOUT = "0.19.0"


def kernels_minver(general: model.General, backend: str) -> str:
    """`kernels-minver` of a `backend` variant: always three components (`X.Y.Z`)."""
    required = BASELINE
    if general.all_kernel_depends(backend):
        required = max(required, KERNEL_DEPENDS, key=tables.version_key)
    if general.build_layout == "zip":
        required = max(required, ZIP_LAYOUT, key=tables.version_key)
    return required
