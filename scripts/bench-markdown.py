#!/usr/bin/env python3
"""Prints a canopy-bench JSON file (bench/results/*.json) as the Markdown tables of
docs/performance.md: the targets table, then every row.

usage: scripts/bench-markdown.py bench/results/<device>-<date>.json
"""
import json
import sys

TARGETS = [  # variant, minimum ratio at 2^26 and 2^28, extra condition text
    ("scan_i32_inclusive", 1.15, "and ≥ 90% of copy"),
    ("scan_i64_exclusive", 1.0, ""),
    ("reduce_i32", 1.0, ""),
    ("select_u32_50", 1.0, ""),
    ("sort_u32_keys", 1.0, ""),
    ("sort_u32_u32_pairs", 1.0, ""),
    ("sort_u64_keys", 1.2, ""),
    ("sort_u64_48bit_keys", 1.0, ""),
    ("merge_sort_u32", 1.0, ""),
    ("segmented_sort_u32_lognormal", 1.0, ""),
]


def lg(n):
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    copy = float(doc["copy_gbps"])
    rows = doc["results"]
    by = {(r["variant"], r["n"]): r for r in rows}
    print(f"Device **{doc['device']}**, commit `{doc['commit']}`, copy bandwidth **{copy:.0f} GB/s** (read + write).\n")
    print("| variant | target | ratio 2^26 | ratio 2^28 | canopy at 2^28 | met |")
    print("|---|---|---|---|---|---|")
    for variant, target, extra in TARGETS:
        r26, r28 = by.get((variant, 1 << 26)), by.get((variant, 1 << 28))
        if not r26 or not r28:
            print(f"| {variant} | ≥ {target:g}{' ' + extra if extra else ''} | - | - | - | not run |")
            continue
        met = r26["ratio"] >= target and r28["ratio"] >= target
        rate = f"{r28['rate']:.1f} {r28['rate_unit']}"
        if variant == "scan_i32_inclusive":
            pct = r28["rate"] / copy
            rate += f" ({100 * pct:.1f}% of copy)"
            met = met and pct >= 0.9 and r26["rate"] / copy >= 0.9
        print(f"| {variant} | ≥ {target:g}{' ' + extra if extra else ''} | {r26['ratio']:.3f} | {r28['ratio']:.3f} | {rate} | "
              f"{'yes' if met else '**no**'} |")
    print("\n| variant | n | canopy ms | baseline ms | ratio | canopy rate | % of copy |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        pct = f"{100 * r['rate'] / copy:.1f}%" if r["rate_unit"] == "GB/s" else "-"
        print(f"| {r['variant']} | {lg(r['n'])} | {r['canopy_ms']:.4f} | {r['baseline_ms']:.4f} | {r['ratio']:.3f} | "
              f"{r['rate']:.2f} {r['rate_unit']} | {pct} |")


if __name__ == "__main__":
    main()
