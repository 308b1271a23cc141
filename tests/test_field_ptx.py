"""The PTX carry chains of the CUDA field arithmetic, run by a model of the PTX instructions.

kernels/field_ptx.cuh is generated (tools/gen_field_ptx.py); this reads the header itself,
executes each asm block on 32-bit registers with a carry flag, and checks the results against
Python integers. It needs no GPU, so a wrong chain fails here, on CI, before any device run.
Every instruction that drops its carry (addc.u32, madc.hi.u32 without .cc) must not overflow:
the model asserts it, which checks the bounds the even/odd product relies on.
"""

from __future__ import annotations

import contextlib
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "cuzk_plugin/backends/cuda/kernels/field_ptx.cuh"
MASK = (1 << 32) - 1

P = {
    "fr": 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    "fq": 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
}
LIMBS = {"fr": 8, "fq": 12}


def parse_functions(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (instruction lines, operand expressions in %n order)."""
    funcs = {}
    pattern = r"(?:void|uint32_t) (\w+)\([^)]*\) \{\n(?:    uint32_t borrow;\n)?    asm\(\n(.*?)\n        : (.*?)\n        : (.*?)\);"
    for m in re.finditer(pattern, text, re.DOTALL):
        name, body, outs, ins = m.groups()
        lines = [ln.strip()[1:].split("\\n")[0].rstrip(";") for ln in body.splitlines()]
        operands = re.findall(r'"[+=]?r"\(([^)]+)\)', outs) + re.findall(r'"[+=]?r"\(([^)]+)\)', ins)
        funcs[name] = (lines, operands)
    return funcs


FUNCS = parse_functions(HEADER.read_text())


def run_block(name: str, values: dict[str, int]) -> dict[str, int]:
    """Executes one asm block; values maps operand expressions ("ev[3]", "b") to words."""
    lines, operands = FUNCS[name]
    regs = {f"%{i}": values.get(expr, 0) for i, expr in enumerate(operands)}
    cf = 0
    cf_family = None  # "add" or "sub": what set the flag (SASS gives them opposite senses)

    def val(tok: str) -> int:
        tok = tok.strip()
        return int(tok, 16) if tok.startswith("0x") else (int(tok) if tok.isdigit() else regs[tok])

    for ln in lines:
        if ln in ("{", "}") or ln.startswith(".reg"):
            continue
        op, args = ln.split(" ", 1)
        a = [x.strip() for x in args.split(",")]
        parts = op.split(".")
        base, sets_cc = parts[0], "cc" in parts
        carry_in = cf if base in ("addc", "madc", "subc") else 0
        if base in ("addc", "madc", "subc"):
            want = "sub" if base == "subc" else "add"
            assert cf_family == want, f"{name}: {ln!r} takes a flag set by a {cf_family} instruction"
        if base in ("add", "addc"):
            full = val(a[1]) + val(a[2]) + carry_in
        elif base in ("sub", "subc"):
            full = val(a[1]) - val(a[2]) - carry_in
        elif base in ("mad", "madc", "mul"):
            prod = val(a[1]) * val(a[2])
            half = prod >> 32 if "hi" in parts else prod & MASK
            full = half + (val(a[3]) if base != "mul" else 0) + carry_in
        elif base == "mov":
            full = val(a[1])
        elif base == "neg":
            full = -val(a[1]) & MASK
        elif base == "min":
            full = min(val(a[1]), val(a[2]))
        else:
            raise AssertionError(f"{name}: unmodelled instruction {ln!r}")
        if sets_cc:
            cf_family = "sub" if base in ("sub", "subc") else "add"
        if base in ("sub", "subc"):
            if sets_cc:
                cf = 1 if full < 0 else 0
            elif base == "sub" and "u32" in parts and not sets_cc:
                assert full >= 0 or a[1] == "0", f"{name}: {ln!r} wraps below zero"
        elif sets_cc:
            cf = full >> 32
        elif base not in ("mul", "neg", "min", "mov", "sub", "subc"):
            assert full >> 32 == 0, f"{name}: {ln!r} drops a carry"
        regs[a[0]] = full & MASK
    return {expr: regs[f"%{i}"] for i, expr in enumerate(operands)}


def words(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & MASK for i in range(n)]


def load(prefix: str, ws: list[int]) -> dict[str, int]:
    return {f"{prefix}[{i}]": w for i, w in enumerate(ws)}


def mont_mul(field: str, a: int, b: int) -> int:
    """The device's product: row 0, rows 1..n-1 with the two arrays swapping roles, merge."""
    n = LIMBS[field]
    bw = words(b, n)
    x = [0] * n  # even-aligned array of row 0
    y = [0] * n
    for i in range(n):
        ev, od = (x, y) if i % 2 == 0 else (y, x)
        values = {**load("a", words(a, n)), "b": bw[i], "inv": (-pow(P[field], -1, 1 << 32)) % (1 << 32),
                  **load("ev", ev), **load("od", od)}
        out = run_block(f"{field}_mont_row0" if i == 0 else f"{field}_mont_row", values)
        ev[:] = [out[f"ev[{j}]"] for j in range(n)]
        od[:] = [out[f"od[{j}]"] for j in range(n)]
        assert ev[0] == 0, "row reduction must clear word 0"
    ev, od = (y, x) if (n - 1) % 2 else (x, y)
    out = run_block(f"{field}_mont_merge", {**load("ev", ev), **load("od", od)})
    return sum(out[f"r[{j}]"] << (32 * j) for j in range(n))


def edge_values(p: int, n: int) -> list[int]:
    return [0, 1, 2, p - 1, p - 2, (p - 1) // 2, (1 << (32 * n - 2)) % p, MASK, p - MASK, (1 << 32) % p]


@pytest.mark.parametrize("field", ["fr", "fq"])
def test_even_odd_montgomery_product_matches_integers(field: str) -> None:
    p, n = P[field], LIMBS[field]
    r_inv = pow(1 << (32 * n), -1, p)
    rng = random.Random(20261202 + n)
    pairs = [(x, y) for x in edge_values(p, n) for y in edge_values(p, n)]
    pairs += [(rng.randrange(p), rng.randrange(p)) for _ in range(300)]
    for a, b in pairs:
        got = mont_mul(field, a, b)
        assert got < 2 * p, f"{field}: a={a:#x} b={b:#x}: result not below 2p"
        assert got % p == a * b * r_inv % p, f"{field}: a={a:#x} b={b:#x}"


@pytest.mark.parametrize("field", ["fr", "fq"])
def test_add_sub_chains_match_integers(field: str) -> None:
    """add_chainN, sub_chainN (with its borrow mask) and the modulus subtraction that
    reduce_once uses, on random and edge values below p."""
    p, n = P[field], LIMBS[field]
    full = 1 << (32 * n)
    rng = random.Random(7 + n)
    values = edge_values(p, n) + [rng.randrange(p) for _ in range(60)]
    for a in values:
        for b in values[::7]:
            out = run_block(f"add_chain{n}", {**load("a", words(a, n)), **load("b", words(b, n))})
            assert sum(out[f"s[{j}]"] << (32 * j) for j in range(n)) == a + b
            out = run_block(f"sub_chain{n}", {**load("a", words(a, n)), **load("b", words(b, n))})
            assert sum(out[f"d[{j}]"] << (32 * j) for j in range(n)) == (a - b) % full
            assert out["borrow"] == (MASK if a < b else 0)
        x = a + p if a < p // 2 else a  # values in [0, 2p) as reduce_once sees them
        out = run_block(f"{field}_sub_modulus", load("x", words(x, n)))
        assert sum(out[f"d[{j}]"] << (32 * j) for j in range(n)) == (x - p) % full
        assert out["borrow"] == (MASK if x < p else 0)


@contextlib.contextmanager
def carry_in_dropped(func: str, operand: str | None = None) -> Iterator[None]:
    """``func`` with its first ``madc.hi`` (the first reading ``operand``, if named) made a
    ``mad.hi``, one carry-in forgotten, until the block ends."""
    lines, operands = FUNCS[func]
    saved = list(lines)
    reg = f"%{operands.index(operand)}" if operand else None
    i = next(k for k, ln in enumerate(lines)
             if ln.startswith("madc.hi.cc.u32") and (reg is None or ln.split(", ")[2] == reg))
    lines[i] = lines[i].replace("madc.hi.cc.u32", "mad.hi.cc.u32")
    try:
        yield
    finally:
        lines[:] = saved


def wrong_results(right: Callable[..., bool], cases: Sequence[tuple[int, ...]]) -> int:
    """How many cases ``right`` finds wrong (an assertion of the model counts as wrong)."""
    bad = 0
    for case in cases:
        try:
            bad += not right(*case)
        except AssertionError:
            bad += 1
    return bad


FQ_R_INV = pow(1 << 384, -1, P["fq"])


def test_model_catches_a_broken_chain() -> None:
    """The model must notice one wrong carry: the test above is only as good as this."""
    p, rng = P["fq"], random.Random(7)
    with carry_in_dropped("fq_mont_row"):
        assert wrong_results(lambda a, b: mont_mul("fq", a, b) % p == a * b * FQ_R_INV % p,
                             [(rng.randrange(p), rng.randrange(p)) for _ in range(20)]) > 0


def test_header_is_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed header is the generator's output (written to tmp_path: the kernels'
    header is never touched, so no test forces an nvcc rebuild)."""
    out = tmp_path / "field_ptx.cuh"
    subprocess.run([sys.executable, str(ROOT / "tools/gen_field_ptx.py"), "--out", str(out)], check=True,
                   capture_output=True)
    assert out.read_text() == HEADER.read_text(), "field_ptx.cuh differs from tools/gen_field_ptx.py's output: regenerate it"


# -- the lazy reduction of Fq2 products -----------------------------------------------------------

def wide_mul(a: int, b: int) -> int:
    """fq_wide_row over the twelve rows (A/B roles as field.cuh's mont_t::mul_wide), then the
    two merges: the 768-bit a b."""
    n = 12
    e, o = [0] * 24, [0] * 23
    aw, bw = words(a, n), words(b, n)
    for i in range(n):
        (A, a_off), (B, b_off) = ((e, i), (o, i)) if i % 2 == 0 else ((o, i - 1), (e, i + 1))
        out = run_block("fq_wide_row", {**load("A", A[a_off:a_off + n + 1]), **load("B", B[b_off:b_off + n]),
                                        **load("a", aw), "b": bw[i]})
        A[a_off:a_off + n + 1] = [out[f"A[{j}]"] for j in range(n + 1)]
        B[b_off:b_off + n] = [out[f"B[{j}]"] for j in range(n)]
    lo = run_block("fq_wide_merge_lo", {**load("e", e[:12]), **load("o", o[:11])})
    hi = run_block("fq_wide_merge_hi", {"c[0]": lo["c[0]"], **load("e", e[12:]), **load("o", o[11:])})
    return sum(lo[f"t[{j}]"] << (32 * j) for j in range(n)) + (sum(hi[f"t[{j}]"] << (32 * j) for j in range(n)) << 384)


def redc(x: int) -> int:
    """fq_redc_row0, eleven fq_redc_rows with the arrays swapping roles, the merge of the last
    row's arrays (as field.cuh's mont_t::redc)."""
    n = 12
    ev, od = words(x, n), [0] * n
    for i in range(n):
        if i:
            ev, od = od, ev  # this row's even array is the previous row's odd one
        out = run_block("fq_redc_row0" if i == 0 else "fq_redc_row", {**load("ev", ev), **load("od", od)})
        ev, od = [out[f"ev[{j}]"] for j in range(n)], [out[f"od[{j}]"] for j in range(n)]
        assert ev[0] == 0, "row reduction must clear word 0"
    out = run_block("fq_mont_merge", {**load("ev", ev), **load("od", od)})
    return sum(out[f"r[{j}]"] << (32 * j) for j in range(n))


def test_wide_product_and_reduction_match_integers() -> None:
    p, top = P["fq"], (1 << 384) - 1
    r_inv = pow(1 << 384, -1, p)
    rng = random.Random(11)
    values = edge_values(p, 12) + [top, top - 1, 2 * p - 1, 1 << 383] + [rng.randrange(1 << 384) for _ in range(40)]
    for a in values:
        for b in values[::5]:
            assert wide_mul(a, b) == a * b, f"a={a:#x} b={b:#x}"
    for x in values + [rng.randrange(1 << 384) for _ in range(100)]:
        got = redc(x)
        assert got <= p and got % p == x * r_inv % p, f"x={x:#x}"


def test_sub_chain_with_borrow_in_matches_integers() -> None:
    rng = random.Random(5)
    full = 1 << 384
    for _ in range(200):
        a, b, bin_ = rng.randrange(full), rng.randrange(full), rng.choice([0, MASK])
        out = run_block("sub_chain12_borrow_in", {**load("a", words(a, 12)), **load("b", words(b, 12)),
                                                  "borrow_in": bin_})
        diff = a - b - (1 if bin_ else 0)
        assert sum(out[f"d[{j}]"] << (32 * j) for j in range(12)) == diff % full
        assert out["borrow"] == (MASK if diff < 0 else 0)


def test_lazy_fq2_product_matches_integers() -> None:
    """fp2.cuh's lazy product, step by step on the modelled blocks, against Fq2 arithmetic:
    (a0 + a1 u)(b0 + b1 u) R^-1 with u^2 = -1."""
    p = P["fq"]
    r_inv = pow(1 << 384, -1, p)
    rng = random.Random(3)
    cases = [tuple(rng.randrange(p) for _ in range(4)) for _ in range(60)]
    cases += [(p - 1, p - 1, p - 1, p - 1), (0, p - 1, p - 1, 0), (p - 1, 0, 0, p - 1), (0, 0, 0, 0), (1, 0, 0, 1)]
    for a0, a1, b0, b1 in cases:
        t0, t1, t2 = wide_mul(a0, b0), wide_mul(a1, b1), wide_mul(a0 + a1, b0 + b1)
        lo0, hi0 = (t0 - t1) % (1 << 384), (t0 - t1) >> 384  # the chains: borrow into the high half
        hi0 = hi0 + p if hi0 < 0 else hi0
        c0 = (hi0 + redc(lo0)) % p
        c1_full = t2 - t0 - t1
        c1 = ((c1_full >> 384) + redc(c1_full % (1 << 384))) % p
        assert hi0 < p and (c1_full >> 384) < p
        assert c0 == (a0 * b0 - a1 * b1) * r_inv % p
        assert c1 == (a0 * b1 + a1 * b0) * r_inv % p


def test_model_rejects_a_carry_used_as_a_borrow() -> None:
    """An add's carry feeding subc is wrong in SASS (the flag's senses differ, which gives wrong
    G2 sums on the GPU): the model must refuse it, not compute it the PTX way."""
    lines, _ = FUNCS["sub_chain12_borrow_in"]
    saved = list(lines)
    lines[0] = lines[0].replace("sub.cc.u32 %0, 0, %37", "add.cc.u32 %0, %37, 1")
    assert lines[0] != saved[0]
    try:
        with pytest.raises(AssertionError, match="flag set by a add"):
            run_block("sub_chain12_borrow_in", {"borrow_in": MASK})
    finally:
        lines[:] = saved


# -- a b - c d with one reduction a row (the curve formulas' Y3, field.cuh's mont_t::mul_sub) -------

def mont2_mul_sub(a: int, b: int, c: int, d: int) -> int:
    """fq_modulus_minus (c' = p - c), fq_mont2_row0, eleven fq_mont2_rows with the arrays
    swapping roles, fq_mont_merge: (a b + c' d) 2^(-384) before mul_sub's conditional subtraction."""
    n = 12
    out = run_block("fq_modulus_minus", load("x", words(c, n)))
    nc = [out[f"d[{j}]"] for j in range(n)]
    bw, dw = words(b, n), words(d, n)
    ev, od = [0] * n, [0] * n
    for i in range(n):
        if i:
            ev, od = od, ev
        values = {**load("a", words(a, n)), "b": bw[i], **load("c", nc), "d": dw[i], **load("ev", ev),
                  **load("od", od)}
        out = run_block("fq_mont2_row0" if i == 0 else "fq_mont2_row", values)
        ev, od = [out[f"ev[{j}]"] for j in range(n)], [out[f"od[{j}]"] for j in range(n)]
        assert ev[0] == 0, "row reduction must clear word 0"
    out = run_block("fq_mont_merge", {**load("ev", ev), **load("od", od)})
    return sum(out[f"r[{j}]"] << (32 * j) for j in range(n))


def test_mont2_mul_sub_matches_integers() -> None:
    """The result is (a b - c d) R^-1 mod p and below 2p (one conditional subtraction makes it
    canonical), for a, b, d < p and c <= p (c = p: c' = 0), edge values included; the model
    asserts no dropped carry, which checks the 3p bound of the rows."""
    p = P["fq"]
    r_inv = pow(1 << 384, -1, p)
    rng = random.Random(2026)
    edges = edge_values(p, 12)
    cases = [(x, y, z, w) for x in edges[::2] for y in edges[1::2] for z in (0, 1, p - 1, p) for w in (0, 1, p - 1)]
    cases += [(p - 1, p - 1, 0, p - 1), (p - 1, p - 1, p - 1, p - 1), (p - 1, p - 1, 1, p - 1)]
    cases += [tuple(rng.randrange(p) for _ in range(4)) for _ in range(200)]
    for a, b, c, d in cases:
        got = mont2_mul_sub(a, b, c, d)
        assert got < 2 * p, f"a={a:#x} b={b:#x} c={c:#x} d={d:#x}: not below 2p"
        assert got % p == (a * b - c * d) * r_inv % p, f"a={a:#x} b={b:#x} c={c:#x} d={d:#x}"


def test_model_catches_a_broken_mont2_row() -> None:
    """One carry-in dropped from the second product's chain must be noticed."""
    p, rng = P["fq"], random.Random(9)
    with carry_in_dropped("fq_mont2_row", "d"):
        assert wrong_results(lambda a, b, c, d: mont2_mul_sub(a, b, c, d) % p == (a * b - c * d) * FQ_R_INV % p,
                             [tuple(rng.randrange(p) for _ in range(4)) for _ in range(20)]) > 0


# -- the squaring: each cross product once (field.cuh's mont_t::sqr) --------------------------------

def sqr_operand(a: list[int], i: int) -> list[int]:
    """field.cuh's mont_t::sqr_operand: words i..n-1 of row i's operand."""
    return [a[i] if k == i else (a[k] << 1) & MASK if k == i + 1 else ((a[k] << 1) | (a[k - 1] >> 31)) & MASK
            for k in range(i, len(a))]


def mont_sqr(a: int) -> int:
    """fq_sqr_row0..11 with the arrays swapping roles, then fq_mont_merge."""
    n = 12
    aw = words(a, n)
    ev, od = [0] * n, [0] * n
    for i in range(n):
        if i:
            ev, od = od, ev
        values = {**load("w", sqr_operand(aw, i)), "b": aw[i], **load("ev", ev), **load("od", od)}
        out = run_block(f"fq_sqr_row{i}", values)
        ev, od = [out[f"ev[{j}]"] for j in range(n)], [out[f"od[{j}]"] for j in range(n)]
        assert ev[0] == 0, "row reduction must clear word 0"
    out = run_block("fq_mont_merge", {**load("ev", ev), **load("od", od)})
    return sum(out[f"r[{j}]"] << (32 * j) for j in range(n))


def test_sqr_matches_integers() -> None:
    """a^2 R^-1 mod p, below 2p, for edge values (0, 1, p - 1, words with the top bit set, whose
    doubling carries into the next word) and random a < p."""
    p = P["fq"]
    r_inv = pow(1 << 384, -1, p)
    rng = random.Random(31)
    top_bits = sum(0x80000000 << (32 * k) for k in range(11))  # every word's top bit but the last
    values = [*edge_values(p, 12), top_bits, top_bits | MASK, p - top_bits, (p - 1) ^ (1 << 31)]
    values += [rng.randrange(p) for _ in range(300)]
    for a in values:
        got = mont_sqr(a)
        assert got < 2 * p, f"a={a:#x}: not below 2p"
        assert got % p == a * a * r_inv % p, f"a={a:#x}"


def test_model_catches_a_broken_sqr_row() -> None:
    """A carry-in dropped from a squaring row's products must be noticed."""
    p, rng = P["fq"], random.Random(13)
    with carry_in_dropped("fq_sqr_row3", "b"):
        assert wrong_results(lambda a: mont_sqr(a) % p == a * a * FQ_R_INV % p,
                             [(rng.randrange(p),) for _ in range(20)]) > 0
