"""Writes cuzk_plugin/backends/cuda/kernels/field_ptx.cuh: the PTX carry chains of the CUDA
field arithmetic, one asm block a chain (so nothing the compiler schedules between two
instructions can clobber the carry flag), for 8 limbs (Fr) and 12 limbs (Fq).

    python tools/gen_field_ptx.py             # rewrites the header in place
    python tools/gen_field_ptx.py --out F     # writes F instead (the test compares it)
"""

from __future__ import annotations

import argparse
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "cuzk_plugin/backends/cuda/kernels/field_ptx.cuh"

MODULI = {
    "fr": 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    "fq": 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
}
LIMBS = {"fr": 8, "fq": 12}


def words(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def block(name: str, args: str, lines: list[str], outs: list[str], ins: list[str], ret: str | None = None) -> str:
    body = "\n".join(f'        "{ln};\\n\\t"' for ln in lines)
    decl_ret = "uint32_t" if ret else "void"
    head = f"__device__ __forceinline__ {decl_ret} {name}({args}) {{\n"
    pre = "    uint32_t borrow;\n" if ret else ""
    post = "    return borrow;\n" if ret else ""
    return (f"{head}{pre}    asm(\n{body}\n        : {', '.join(outs)}\n        : {', '.join(ins)});\n{post}}}\n")


def add_chain(n: int) -> str:
    """s = a + b (n words, carry out dropped: callers keep a + b below 2^(32n))."""
    lines = [f"{'add' if j == 0 else 'addc'}{'.cc' if j < n - 1 else ''}.u32 %{j}, %{n + j}, %{2 * n + j}"
             for j in range(n)]
    outs = [f'"=r"(s[{j}])' for j in range(n)]
    ins = [f'"r"(a[{j}])' for j in range(n)] + [f'"r"(b[{j}])' for j in range(n)]
    return block(f"add_chain{n}", "uint32_t* s, const uint32_t* a, const uint32_t* b", lines, outs, ins)


def sub_chain(n: int) -> str:
    """d = a - b; returns 0xffffffff when it borrowed (a < b), else 0."""
    lines = [f"{'sub' if j == 0 else 'subc'}.cc.u32 %{j + 1}, %{n + 1 + j}, %{2 * n + 1 + j}" for j in range(n)]
    lines.append("subc.u32 %0, 0, 0")
    outs = ['"=r"(borrow)'] + [f'"=r"(d[{j}])' for j in range(n)]
    ins = [f'"r"(a[{j}])' for j in range(n)] + [f'"r"(b[{j}])' for j in range(n)]
    return block(f"sub_chain{n}", "uint32_t* d, const uint32_t* a, const uint32_t* b", lines, outs, ins, ret="borrow")


def sub_modulus(field: str) -> str:
    """d = x - p with p as immediates; returns the borrow mask (x < p)."""
    n = LIMBS[field]
    p = words(MODULI[field], n)
    lines = [f"{'sub' if j == 0 else 'subc'}.cc.u32 %{j + 1}, %{n + 1 + j}, 0x{p[j]:08x}" for j in range(n)]
    lines.append("subc.u32 %0, 0, 0")
    outs = ['"=r"(borrow)'] + [f'"=r"(d[{j}])' for j in range(n)]
    ins = [f'"r"(x[{j}])' for j in range(n)]
    return block(f"{field}_sub_modulus", "uint32_t* d, const uint32_t* x", lines, outs, ins, ret="borrow")


# ---------------------------------------------------------------------------------------------
# Montgomery product with even/odd accumulators.
#
# a b 2^(-32N) mod p, CIOS order (one row a word b_i), but the row's products a_k b_i are split
# by the parity of k: even k go to `ev` at words (k, k+1), odd k to `od` at words (k-1, k),
# where `od` carries weight 2^32 (the value is ev + 2^32 od). Each product's low and high
# halves then land in two neighbouring words of one carry chain (mad.lo.cc then madc.hi.cc of
# the same operands), which ptxas issues as one 64-bit IMAD.WIDE; the previous layout (a chain
# of low halves, then a chain of high halves) needed an IMAD, an IMAD.HI and an IADD3.X per
# product.
#
# After the row's reduction (m = ev_0 p', ev += p_even m, od += p_odd m) ev_0 is zero, and
# dividing by 2^32 gives od + (ev >> 32). The next row swaps the roles: od becomes the
# even-aligned array (its word 0 takes ev_1 with add.cc, whose carry feeds the chain below),
# and ev, moved down two words in place (od'[j] = product + ev[j+2]), becomes the odd one.
# Bounds: with a, b < p every row ends below 2^32 * 2p, and 2p < 2^(32N) for both fields, so
# the odd array never carries out of word N-1 (the model in tests/test_field_ptx.py checks
# every dropped carry is zero).
# ---------------------------------------------------------------------------------------------

INV = {f: (-pow(MODULI[f], -1, 1 << 32)) % (1 << 32) for f in MODULI}

Instr = tuple  # (opcode, dst, src...): ("ev", j) / ("od", j) / ("a", j) / ("b",), locals ("m",) etc., ints

# Fr's -p^-1 mod 2^32 is 2^32 - 1, so m = -t_0: seeing that, ptxas gave up IMAD.WIDE for every
# m p_k product (IMAD.X + IMAD.HI.X each: 272 SASS instructions a product instead of ~216).
# Passed in as an operand (the caller loads it from constant memory, a value ptxas cannot
# fold), m is an ordinary product again.
INV_AS_OPERAND = {"fr": True, "fq": False}


def mont_row(field: str, first: bool) -> list[Instr]:
    """One row: (ev, od) += a b_i, then the Montgomery reduction of word 0 (roles as called)."""
    return row_products(field, first) + mont_reduction(field)


def row_products(field: str, first: bool, x=lambda k: ("a", k), start: int = 0) -> list[Instr]:
    """A row's shift (not in row 0) and (ev, od) += sum_k x(k) b 2^(32k) for k >= start (the
    squaring's rows leave out the words below start: those words are only shifted)."""
    n = LIMBS[field]
    code: list[Instr] = []
    if first:  # nothing to add to: plain products, no carries (the pairs do not overlap)
        assert start == 0
        for k in range(0, n, 2):
            code += [("mul.lo.u32", ("ev", k), x(k), ("b",)), ("mul.hi.u32", ("ev", k + 1), x(k), ("b",))]
        for k in range(1, n, 2):
            code += [("mul.lo.u32", ("od", k - 1), x(k), ("b",)), ("mul.hi.u32", ("od", k), x(k), ("b",))]
    else:
        # ev_0 += od_1: the carry (weight 2^32) enters the odd chain, whose word 0 has that weight.
        # Where the row leaves out odd words (start > 1), the carry is kept in a word c for the
        # reduction's odd chain (mont_reduction, carry_word), so the words left out are plain
        # moves instead of a carry chain.
        code.append(("add.cc.u32", ("ev", 0), ("ev", 0), ("od", 1)))
        if start > 1:
            code.append(("addc.u32", ("c",), 0, 0))
        for k in range(1, n, 2):  # od[j] = lo/hi(x_k b) + od[j + 2]: the shift by two words
            lo_add = ("od", k + 1) if k + 1 < n else 0
            hi_add = ("od", k + 2) if k + 2 < n else 0
            last = k == n - 1
            if k < start:
                code += [("mov.u32", ("od", k - 1), lo_add), ("mov.u32", ("od", k), hi_add)]
            else:
                first_product = start > 1 and k in (start, start + 1)
                code += [("mad.lo.cc.u32" if first_product else "madc.lo.cc.u32", ("od", k - 1), x(k), ("b",), lo_add),
                         ("madc.hi.u32" if last else "madc.hi.cc.u32", ("od", k), x(k), ("b",), hi_add)]
        k0 = start + start % 2
        code += even_chain(n, [x(k) for k in range(k0, n, 2)], ("b",), k0)
    return code


def mont2_row(field: str, first: bool) -> list[Instr]:
    """One row of (a b + c d) 2^(-32N): the product row a b_i (mont_row's, without its reduction),
    then c d_i added in place (two more chains), then one reduction for both products.
    Bounds (a, c <= p, b, d < p): after row i the value is below a + c + p <= 3p < 2^(32N - 1),
    so within a row it stays below 3p 2^32; the odd array (weight 2^32, a sub-sum) stays below
    3p and never carries out of word N-1, and the merge gives (a b + c d + M p) / 2^(32N) <
    2p^2 / 2^(32N) + p < 1.3p (p < 2^(32N) / 8): one conditional subtraction."""
    n = LIMBS[field]
    code = row_products(field, first)
    for k in range(1, n, 2):  # od[k-1..k] += c_k d (odd k, weight 2^32 built into od)
        code += [("mad.lo.cc.u32" if k == 1 else "madc.lo.cc.u32", ("od", k - 1), ("c", k), ("d",), ("od", k - 1)),
                 ("madc.hi.u32" if k == n - 1 else "madc.hi.cc.u32", ("od", k), ("c", k), ("d",), ("od", k))]
    code += even_chain(n, [("c", k) for k in range(0, n, 2)], ("d",))
    return code + mont_reduction(field)


# ---------------------------------------------------------------------------------------------
# Squaring: a^2 = sum_i a_i 2^(32i) (a_i 2^(32i) + 2 sum_(j>i) a_j 2^(32j)), so row i of the
# Montgomery product needs the products a_i w_k for k >= i only, with w_i = a_i and w_k (k > i)
# the words of 2 (a with words <= i cleared): w_(i+1) = a_(i+1) << 1, w_k = the words of 2a
# above. The caller (field.cuh, mont_t::sqr) forms w; each cross product a_i a_j is made once:
# N (N + 1) / 2 word products and the N^2 of the reduction, instead of 2 N^2.
# Bound: the products added by rows 0..i sum to A^2 + 2 A B with A = a's words <= i and B the
# rest, at most a^2 and below 2 a 2^(32(i + 1)); so after row i the value is below 2a + p < 3p
# (as mont2_row's), and the merge gives a^2 / 2^(32N) + p < 1.2p.
# ---------------------------------------------------------------------------------------------


def sqr_row(field: str, i: int) -> list[Instr]:
    """Row i of the squaring: w holds words i..N-1 (w[k - i]), b = a_i."""
    return row_products(field, i == 0, lambda k: ("w", k - i), start=i) + mont_reduction(field, carry_word=i > 1)


def sqr_functions(field: str) -> list[str]:
    n = LIMBS[field]
    return [render(f"{field}_sqr_row{i}", "uint32_t* ev, uint32_t* od, const uint32_t* w, uint32_t b", sqr_row(field, i),
                   {"ev": (n, '"=r"' if i == 0 else '"+r"'), "od": (n, '"=r"' if i == 0 else '"+r"'),
                    "w": (n - i, '"r"')})
            for i in range(n)]


def modulus_minus(field: str) -> str:
    """d = p - x for x <= p (p as immediates; no borrow out)."""
    n = LIMBS[field]
    p = words(MODULI[field], n)
    lines = [f"{'sub' if j == 0 else 'subc'}{'.cc' if j < n - 1 else ''}.u32 %{j}, 0x{p[j]:08x}, %{n + j}"
             for j in range(n)]
    outs = [f'"=r"(d[{j}])' for j in range(n)]
    ins = [f'"r"(x[{j}])' for j in range(n)]
    return block(f"{field}_modulus_minus", "uint32_t* d, const uint32_t* x", lines, outs, ins)


def mont_reduction(field: str, carry_word: bool = False) -> list[Instr]:
    """The row's reduction: m = ev_0 p', (ev, od) += m p, after which ev_0 is zero. With
    carry_word, the one-bit word c (weight 2^32, the squaring rows' deferred carry) enters the
    odd chain at od_0."""
    n = LIMBS[field]
    p = words(MODULI[field], n)
    code: list[Instr] = [("mul.lo.u32", ("m",), ("ev", 0), ("inv",) if INV_AS_OPERAND[field] else INV[field])]
    if carry_word:
        code.append(("add.cc.u32", ("c",), ("c",), 0xFFFFFFFF))  # carry flag = c (0 or 1)
    for k in range(1, n, 2):
        code += modulus_pair(("od", k - 1), ("od", k), p[k], k == 1 and not carry_word, k == n - 1)
    for k in range(0, n, 2):
        code += modulus_pair(("ev", k), ("ev", k + 1), p[k], k == 0, False)
    code.append(("addc.u32", ("od", n - 1), ("od", n - 1), 0))
    return code


# ---------------------------------------------------------------------------------------------
# Lazy reduction for Fq2 (fp2.cuh): the three Karatsuba products as full 768-bit values, their
# sums and differences taken before any reduction, and two Montgomery reductions instead of
# three (a sixth fewer word products an Fq2 product).
#
# The 768-bit product a b (a, b < 2^384) uses the even/odd split too: E takes the products
# a_k b_i with i + k even at words (i + k, i + k + 1), O the odd ones at words (i + k - 1,
# i + k) with weight 2^32. Both are sub-sums of a b, and after rows 0..i either is below
# a 2^(32(i + 1)) < 2^(32(n + i + 1)), so a row's last carry lands in a word that cannot
# overflow, or is zero (the model checks both). Row i is one block: chain A adds the even a_k
# with a carry word, chain B the odd a_k without one; for even i, A is E at word i and B is O
# at word i, for odd i, A is O at word i - 1 and B is E at word i + 1.
#
# The reduction of T = T_lo + 2^(32n) T_hi (T < p 2^(32n)) is T_hi + REDC(T_lo), where REDC
# runs the product's reduction rows without the products (x 2^(-32n) mod p, at most p for any
# x < 2^(32n)): the sum is below 2p, one conditional subtraction.
# ---------------------------------------------------------------------------------------------


def wide_row(field: str) -> list[Instr]:
    """A[0..n] += a_even b (pairs at words (k, k + 1), carry into A[n]); B[0..n-1] += a_odd b
    (pairs at (k - 1, k), no carry out)."""
    n = LIMBS[field]
    code: list[Instr] = []
    for k in range(0, n, 2):
        code += [("mad.lo.cc.u32" if k == 0 else "madc.lo.cc.u32", ("A", k), ("a", k), ("b",), ("A", k)),
                 ("madc.hi.cc.u32", ("A", k + 1), ("a", k), ("b",), ("A", k + 1))]
    code.append(("addc.u32", ("A", n), ("A", n), 0))
    for k in range(1, n, 2):
        last = k == n - 1
        code += [("mad.lo.cc.u32" if k == 1 else "madc.lo.cc.u32", ("B", k - 1), ("a", k), ("b",), ("B", k - 1)),
                 ("madc.hi.u32" if last else "madc.hi.cc.u32", ("B", k), ("a", k), ("b",), ("B", k))]
    return code


def wide_merge(field: str, half: int) -> list[Instr]:
    """t = E + 2^32 O, one half (n words) at a time: half 0 returns its carry word in c,
    half 1 takes it."""
    n = LIMBS[field]
    code: list[Instr] = []
    if half == 0:
        code.append(("add.u32", ("t", 0), ("e", 0), 0))
        for j in range(1, n):
            code.append(("add.cc.u32" if j == 1 else "addc.cc.u32", ("t", j), ("e", j), ("o", j - 1)))
        code.append(("addc.u32", ("c", 0), 0, 0))
    else:
        code.append(("add.cc.u32", ("t", 0), ("c", 0), 0xFFFFFFFF))  # carry flag = c (0 or 1)
        for j in range(n):
            last = j == n - 1
            code.append(("addc.u32" if last else "addc.cc.u32", ("t", j), ("e", j), ("o", j)))
    return code


def redc_row(field: str, first: bool) -> list[Instr]:
    """A product row without its product (b = 0; row 0 starts from ev = x, od = 0)."""
    n = LIMBS[field]
    code: list[Instr] = []
    if not first:
        code.append(("add.cc.u32", ("ev", 0), ("ev", 0), ("od", 1)))
        for k in range(1, n, 2):
            lo_add = ("od", k + 1) if k + 1 < n else 0
            hi_add = ("od", k + 2) if k + 2 < n else 0
            code += [("addc.cc.u32", ("od", k - 1), lo_add, 0),
                     ("addc.u32" if k == n - 1 else "addc.cc.u32", ("od", k), hi_add, 0)]
    return code + mont_reduction(field)


def sub_chain_borrow_in(n: int) -> str:
    """d = a - b - borrow_in (the mask sub_chainN returns); returns the borrow mask."""
    # The borrow flag is set by a subtraction (0 - mask borrows when the mask is set): in SASS
    # an add's carry and a subtraction's borrow are opposite senses of one flag, so a chain
    # must not mix them (an add.cc before subc gives wrong G2 sums on the GPU).
    lines = [f"sub.cc.u32 %0, 0, %{3 * n + 1}"]
    lines += [f"subc.cc.u32 %{j + 1}, %{n + 1 + j}, %{2 * n + 1 + j}" for j in range(n)]
    lines.append("subc.u32 %0, 0, 0")
    outs = ['"=r"(borrow)'] + [f'"=r"(d[{j}])' for j in range(n)]
    ins = [f'"r"(a[{j}])' for j in range(n)] + [f'"r"(b[{j}])' for j in range(n)] + ['"r"(borrow_in)']
    return block(f"sub_chain{n}_borrow_in", "uint32_t* d, const uint32_t* a, const uint32_t* b, uint32_t borrow_in",
                 lines, outs, ins, ret="borrow")


def modulus_pair(lo, hi, word: int, first: bool, last: bool) -> list[Instr]:
    """(hi, lo) += m word inside a carry chain."""
    mad_lo = "mad.lo.cc.u32" if first else "madc.lo.cc.u32"
    mad_hi = "madc.hi.u32" if last else "madc.hi.cc.u32"
    return [(mad_lo, lo, ("m",), word, lo), (mad_hi, hi, ("m",), word, hi)]


def even_chain(n: int, xs: list, y, k0: int = 0) -> list[Instr]:
    """ev += sum_i xs[i] y 2^(32k), k = k0 + 2i (k0 even); the carry out (weight 2^(32n)) goes to
    od_(n-1). Nothing when xs is empty."""
    code: list[Instr] = []
    for i, x in enumerate(xs):
        k = k0 + 2 * i
        code += [("mad.lo.cc.u32" if i == 0 else "madc.lo.cc.u32", ("ev", k), x, y, ("ev", k)),
                 ("madc.hi.cc.u32", ("ev", k + 1), x, y, ("ev", k + 1))]
    if xs:
        code.append(("addc.u32", ("od", n - 1), ("od", n - 1), 0))
    return code


def mont_merge(field: str) -> list[Instr]:
    """r = od + (ev >> 32) after the last row (< 2p, below 2^(32n))."""
    n = LIMBS[field]
    code: list[Instr] = []
    for j in range(n):
        op = "add.cc.u32" if j == 0 else ("addc.u32" if j == n - 1 else "addc.cc.u32")
        code.append((op, ("r", j), ("od", j), ("ev", j + 1) if j + 1 < n else 0))
    return code


SCALAR_INPUTS = ("b", "d", "inv")


def render(name: str, args: str, code: list[Instr], arrays: dict[str, tuple[int, str]]) -> str:
    """One asm block; arrays maps a name to (length, constraint); SCALAR_INPUTS are inputs when
    used, other one-word names registers local to the block."""
    operands: list[tuple[str, str]] = []
    index: dict[tuple, int] = {}
    for arr, (length, constraint) in arrays.items():
        for j in range(length):
            index[(arr, j)] = len(operands)
            operands.append((constraint, f"{arr}[{j}]"))
    for scalar in SCALAR_INPUTS:
        if any((scalar,) in ins for ins in code):
            index[(scalar,)] = len(operands)
            operands.append(('"r"', scalar))

    def fmt(x) -> str:
        if isinstance(x, int):
            return f"0x{x:08x}"
        return f"%{index[x]}" if x in index else x[0]

    lines = [f"{ins[0]} {', '.join(fmt(x) for x in ins[1:])};" for ins in code]
    local = sorted({x[0] for ins in code for x in ins[1:] if isinstance(x, tuple) and x not in index})
    if local:
        lines = ["{", f".reg .u32 {', '.join(local)};", *lines, "}"]
    body = "\n".join(f'        "{ln}\\n\\t"' for ln in lines)
    outs = [f"{c}({e})" for c, e in operands if c[1] in "+="]
    ins = [f"{c}({e})" for c, e in operands if c[1] not in "+="]
    return (f"__device__ __forceinline__ void {name}({args}) {{\n    asm(\n{body}\n"
            f"        : {', '.join(outs)}\n        : {', '.join(ins)});\n}}\n")


def mont_functions(field: str) -> list[str]:
    n = LIMBS[field]
    args = "uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b"
    if INV_AS_OPERAND[field]:
        args += ", uint32_t inv"
    return [
        render(f"{field}_mont_row0", args, mont_row(field, True),
               {"ev": (n, '"=r"'), "od": (n, '"=r"'), "a": (n, '"r"')}),
        render(f"{field}_mont_row", args, mont_row(field, False),
               {"ev": (n, '"+r"'), "od": (n, '"+r"'), "a": (n, '"r"')}),
        render(f"{field}_mont_merge", "uint32_t* r, const uint32_t* ev, const uint32_t* od", mont_merge(field),
               {"r": (n, '"=r"'), "od": (n, '"r"'), "ev": (n, '"r"')}),
    ]


def mont2_functions(field: str) -> list[str]:
    """(a b + c d) 2^(-32N): the curve formulas' Y3 = R (Q - X3) - Y PPP with c = p - Y (curve.cuh)."""
    n = LIMBS[field]
    args = "uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b, const uint32_t* c, uint32_t d"
    return [
        modulus_minus(field),
        render(f"{field}_mont2_row0", args, mont2_row(field, True),
               {"ev": (n, '"=r"'), "od": (n, '"=r"'), "a": (n, '"r"'), "c": (n, '"r"')}),
        render(f"{field}_mont2_row", args, mont2_row(field, False),
               {"ev": (n, '"+r"'), "od": (n, '"+r"'), "a": (n, '"r"'), "c": (n, '"r"')}),
    ]


def lazy_functions(field: str) -> list[str]:
    n = LIMBS[field]
    args = "uint32_t* ev, uint32_t* od"
    return [
        render(f"{field}_wide_row", "uint32_t* A, uint32_t* B, const uint32_t* a, uint32_t b", wide_row(field),
               {"A": (n + 1, '"+r"'), "B": (n, '"+r"'), "a": (n, '"r"')}),
        render(f"{field}_wide_merge_lo", "uint32_t* t, uint32_t* c, const uint32_t* e, const uint32_t* o",
               wide_merge(field, 0), {"t": (n, '"=r"'), "c": (1, '"=r"'), "e": (n, '"r"'), "o": (n - 1, '"r"')}),
        render(f"{field}_wide_merge_hi", "uint32_t* t, const uint32_t* c, const uint32_t* e, const uint32_t* o",
               wide_merge(field, 1), {"t": (n, '"=r"'), "c": (1, '"r"'), "e": (n, '"r"'), "o": (n, '"r"')}),
        render(f"{field}_redc_row0", args, redc_row(field, True), {"ev": (n, '"+r"'), "od": (n, '"+r"')}),
        render(f"{field}_redc_row", args, redc_row(field, False), {"ev": (n, '"+r"'), "od": (n, '"+r"')}),
    ]


def header_text() -> str:
    """The whole generated header."""
    parts = [
        ("// Generated by tools/gen_field_ptx.py: do not edit by hand.\n"
        "// PTX carry chains for the device field arithmetic (field.cuh), one asm block a chain so\n"
        "// nothing the compiler schedules can disturb the carry flag:\n"
        "//   add_chainN: s = a + b;  sub_chainN: d = a - b, returns the borrow mask\n"
        "//   fr_sub_modulus / fq_sub_modulus: d = x - p, returns the borrow mask\n"
        "//   fr/fq_mont_row0, _mont_row, _mont_merge: the even/odd Montgomery product (see the generator)\n"
        "//   sub_chain12_borrow_in; fq_wide_row, _wide_merge_lo/_hi, _redc_row0, _redc_row: the lazy\n"
        "//   reduction of Fq2 products (768-bit products, reduction rows without products)\n"
        "//   fq_modulus_minus: d = p - x;  fq_mont2_row0, _mont2_row: (a b + c d) with one reduction a row\n"
        "//   fq_sqr_row0..11: the Montgomery squaring's rows, each cross product once\n"
        "#pragma once\n#include <cstdint>\n"),
    ]
    for n in (8, 12):
        parts += [add_chain(n), sub_chain(n)]
    parts += [sub_modulus("fr"), sub_modulus("fq")]
    parts += mont_functions("fr") + mont_functions("fq")
    parts += [sub_chain_borrow_in(12), *lazy_functions("fq"), *mont2_functions("fq"), *sqr_functions("fq")]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the PTX carry chains of the CUDA field arithmetic.")
    parser.add_argument("--out", type=Path, default=OUT, help="output file (default: the kernels' field_ptx.cuh)")
    args = parser.parse_args(argv)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(header_text())
    tmp.replace(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
