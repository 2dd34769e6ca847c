"""Write (or check) the SYNTHETIC WebShop catalog shipped in ``smcplan/envs/webshop/data/``.

    python scripts/webshop_catalog.py            # regenerate the shipped files
    python scripts/webshop_catalog.py --check    # exit 1 if they differ from the generator
    python scripts/webshop_catalog.py --out DIR  # write them elsewhere

The generator is :mod:`smcplan.envs.webshop.synthetic` (a pure function of its tables and seed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smcplan.envs.webshop import synthetic
from smcplan.envs.webshop.catalog import DATA_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder")
    parser.add_argument(
        "--check", action="store_true", help="compare with the files in --out instead of writing"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = synthetic.stale_files(args.out)
        if stale:
            print(f"synthetic catalog in {args.out} differs from the generator: {', '.join(stale)}")
            return 1
        print(f"synthetic catalog in {args.out} matches the generator")
        return 0
    for path in synthetic.write(args.out).values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
