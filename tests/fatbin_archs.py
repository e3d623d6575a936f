"""List the GPU code embedded in a CUDA object or shared library.

Reads the `.nv_fatbin` ELF section (one fat binary per compiled .cu file) and
prints one line per entry: `sm_80 elf` for SASS (a cubin) or `compute_90 ptx`
for PTX. No CUDA toolkit is needed; `cuobjdump --list-elf/--list-ptx` prints
the same facts.

Fat binary layout (little endian, as written by nvcc 11-13):
  header  u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 entries_size
  entry   u16 kind (1 PTX, 2 ELF), u16 version, u32 header_size, u64 payload_size,
          u32, u32, u16 minor, u16 major, u32 arch (e.g. 90), u32, u32,
          u64 flags (0x100000: arch-specific "a", 0x200000: family "f"), ...
  payload (payload_size bytes), then the next entry.
(Observed with nvcc 13.0; cuobjdump 13.4 agrees, except that it prints a
family cubin as sm_100 where this prints sm_100f.)

Usage: python tests/fatbin_archs.py FILE [--expect 8.0 9.0 [9.0+PTX ...]]
With --expect, exits 1 unless the SASS/PTX targets are exactly those.
"""

import argparse
import struct
import sys
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
KIND = {1: "ptx", 2: "elf"}
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000


def elf_section(data: bytes, name: str) -> bytes:
    """Return the contents of section `name` of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    strtab = header(shstrndx)
    names = data[strtab[4] : strtab[4] + strtab[5]]
    for i in range(shnum):
        sh_name, sh_type, _, _, offset, size = header(i)
        end = names.index(b"\0", sh_name)
        if names[sh_name:end].decode() == name:
            if sh_type == 8:  # SHT_NOBITS
                return b""
            return data[offset : offset + size]
    return b""


def fatbin_entries(blob: bytes):
    """Yield (kind, arch) for every entry of every fat binary in `blob`, with
    arch like "90", "90a" or "100f"."""
    pos = 0
    while pos + 16 <= len(blob):
        magic, _, header_size, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fat binaries are 8-byte aligned; skip padding
            continue
        entry = pos + header_size
        end = entry + size
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            (arch,) = struct.unpack_from("<I", blob, entry + 28)
            (flags,) = struct.unpack_from("<Q", blob, entry + 40)
            suffix = (
                "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
            )
            yield KIND.get(kind, f"kind{kind}"), f"{arch}{suffix}"
            entry += entry_header + payload
        pos = end


def targets(path: Path) -> list[str]:
    blob = elf_section(path.read_bytes(), ".nv_fatbin")
    out = []
    for kind, arch in fatbin_entries(blob):
        out.append(f"sm_{arch} elf" if kind == "elf" else f"compute_{arch} {kind}")
    return sorted(set(out))


def expected_targets(capabilities: list[str]) -> list[str]:
    out = []
    for cap in capabilities:
        base = cap.removesuffix("+PTX")
        mm = base.replace(".", "")
        out.append(f"sm_{mm} elf")
        if cap.endswith("+PTX"):
            out.append(f"compute_{mm} ptx")
    return sorted(set(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--expect", nargs="+", metavar="CAP")
    args = parser.parse_args()
    found = targets(args.file)
    for line in found:
        print(line)
    if not found:
        print(f"{args.file}: no .nv_fatbin section", file=sys.stderr)
    if args.expect is not None:
        want = expected_targets(args.expect)
        if found != want:
            print(f"expected {want}, found {found}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
