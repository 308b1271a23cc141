/* Poseidon hashes over BLS12-381's Fr with every intermediate the circuit allocates, on the CPU.
 *
 * The schedule is the one of cuzk_plugin/filecoin/witness/poseidon.py (neptune's optimized
 * rounds as the gadget allocates them); the caller passes the round constants and matrices, so
 * this file knows no constant but the modulus. Arithmetic is Montgomery (4 x 64-bit limbs,
 * CIOS; r's top limb is below 2^63 - 1, so the final carry word is never needed and a product
 * is below 2r before its conditional subtraction). Inputs and outputs are canonical.
 *
 * cz_poseidon_many(...) hashes n preimages: preimage k is `arity` consecutive field elements at
 * preimage + 4 * arity * k; its num_aux aux values go to aux + aux_offset[k] (uint64 units,
 * element j at + 4 j), its digest to digest + 4 k. */

#include <stdint.h>

typedef unsigned __int128 u128;

static const uint64_t P[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL,
                              0x73eda753299d7d48ULL};
static const uint64_t INV = 0xfffffffeffffffffULL; /* -r^-1 mod 2^64 */
/* 2^512 mod r: to_mont(x) = mont_mul(x, R2) */
static const uint64_t R2[4] = {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL,
                               0x0748d9d99f59ff11ULL};

typedef struct { uint64_t v[4]; } fe;

static inline void sub_if_ge(uint64_t t[4]) {
    uint64_t d[4], borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 x = (u128)t[i] - P[i] - borrow;
        d[i] = (uint64_t)x;
        borrow = (uint64_t)(x >> 64) & 1;
    }
    if (!borrow) {
        t[0] = d[0]; t[1] = d[1]; t[2] = d[2]; t[3] = d[3];
    }
}

static inline fe mont_mul(fe a, fe b) {
    uint64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (int i = 0; i < 4; i++) {
        u128 acc;
        uint64_t c, t4, m, ai = a.v[i];
        acc = (u128)ai * b.v[0] + t0; t0 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)ai * b.v[1] + t1 + c; t1 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)ai * b.v[2] + t2 + c; t2 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)ai * b.v[3] + t3 + c; t3 = (uint64_t)acc; t4 = (uint64_t)(acc >> 64);
        m = t0 * INV;
        acc = (u128)m * P[0] + t0; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[1] + t1 + c; t0 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[2] + t2 + c; t1 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[3] + t3 + c; t2 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        t3 = t4 + c;
    }
    fe r = {{t0, t1, t2, t3}};
    sub_if_ge(r.v);
    return r;
}

/* x * 2^-256 mod r: a Montgomery value back to canonical */
static inline fe redc(fe a) {
    uint64_t t0 = a.v[0], t1 = a.v[1], t2 = a.v[2], t3 = a.v[3];
    for (int i = 0; i < 4; i++) {
        u128 acc;
        uint64_t c, m = t0 * INV;
        acc = (u128)m * P[0] + t0; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[1] + t1 + c; t0 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[2] + t2 + c; t1 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        acc = (u128)m * P[3] + t3 + c; t2 = (uint64_t)acc; c = (uint64_t)(acc >> 64);
        t3 = c;
    }
    fe r = {{t0, t1, t2, t3}};
    sub_if_ge(r.v);
    return r;
}

static inline fe add(fe a, fe b) {
    fe r;
    uint64_t c = 0;
    for (int i = 0; i < 4; i++) {
        u128 x = (u128)a.v[i] + b.v[i] + c;
        r.v[i] = (uint64_t)x;
        c = (uint64_t)(x >> 64);
    }
    sub_if_ge(r.v); /* a, b < r < 2^255: no carry out */
    return r;
}

static inline void put(uint64_t *dst, fe mont) {
    fe c = redc(mont);
    dst[0] = c.v[0]; dst[1] = c.v[1]; dst[2] = c.v[2]; dst[3] = c.v[3];
}

static inline fe get(const uint64_t *src) {
    fe x = {{src[0], src[1], src[2], src[3]}};
    return x;
}

#define MAX_WIDTH 17

/* out = M s with M given row by row (out[j] = sum_i M[j t + i] s[i]) */
static inline void dense(int t, const fe *m, fe *s) {
    fe out[MAX_WIDTH];
    for (int j = 0; j < t; j++) {
        fe acc = mont_mul(m[j * t], s[0]);
        for (int i = 1; i < t; i++) acc = add(acc, mont_mul(m[j * t + i], s[i]));
        out[j] = acc;
    }
    for (int j = 0; j < t; j++) s[j] = out[j];
}

/* the sparse matrix of a partial round: out[0] = w_hat . s, out[i] = s[i] + v_rest[i-1] s[0] */
static inline void sparse(int t, const fe *w_hat, const fe *v_rest, fe *s) {
    fe s0 = s[0];
    fe acc = mont_mul(w_hat[0], s[0]);
    for (int i = 1; i < t; i++) acc = add(acc, mont_mul(w_hat[i], s[i]));
    s[0] = acc;
    for (int i = 1; i < t; i++) s[i] = add(s[i], mont_mul(v_rest[i - 1], s0));
}

/* x^5 (+ key when key is not NULL), writing x, x^2, x^4 and the result */
static inline fe sbox(fe x, const fe *key, uint64_t **aux) {
    fe l2 = mont_mul(x, x);
    fe l4 = mont_mul(l2, l2);
    fe l5 = mont_mul(l4, x);
    if (key) l5 = add(l5, *key);
    put(*aux, x); put(*aux + 4, l2); put(*aux + 8, l4); put(*aux + 12, l5);
    *aux += 16;
    return l5;
}

/* Constants, all in Montgomery form: s0 the first round's element 0 ((tag + pre_0)^5 + post_0,
 * a constant), keys the compressed round constants (from index 0), mds and pre_sparse t x t row
 * by row, w_hat partial x t, v_rest partial x (t - 1). Returns 0, or -1 for a width it does not
 * take. */
int cz_poseidon_many(int arity, int full_rounds, int partial_rounds, const uint64_t *s0, const uint64_t *keys,
                     const uint64_t *mds, const uint64_t *pre_sparse, const uint64_t *w_hat, const uint64_t *v_rest,
                     int64_t n, const uint64_t *preimage, uint64_t *aux, const int64_t *aux_offset, uint64_t *digest) {
    const int t = arity + 1, half = full_rounds / 2;
    if (t > MAX_WIDTH || t < 2) return -1;
    const fe *K = (const fe *)keys, *M = (const fe *)mds, *PS = (const fe *)pre_sparse;
    const fe *W = (const fe *)w_hat, *V = (const fe *)v_rest;
    const fe r2 = {{R2[0], R2[1], R2[2], R2[3]}};
    for (int64_t k = 0; k < n; k++) {
        fe s[MAX_WIDTH];
        uint64_t *out = aux + aux_offset[k];
        const uint64_t *in = preimage + (int64_t)4 * arity * k;
        int off = 2 * t, rnd = 0;
        s[0] = get(s0);
        /* first full round: the preimage is allocated already, x + pre is not */
        for (int i = 1; i < t; i++) {
            fe xp = add(mont_mul(get(in + 4 * (i - 1)), r2), K[i]);
            fe l2 = mont_mul(xp, xp);
            fe l4 = mont_mul(l2, l2);
            s[i] = add(mont_mul(l4, xp), K[t + i]);
            put(out, l2); put(out + 4, l4); put(out + 8, s[i]);
            out += 12;
        }
#define MIX()                                                                       \
        do {                                                                        \
            if (rnd == half - 1) dense(t, PS, s);                                   \
            else if (rnd > half - 1 && rnd < half + partial_rounds)                 \
                sparse(t, W + (rnd - half) * t, V + (rnd - half) * (t - 1), s);     \
            else dense(t, M, s);                                                    \
            rnd++;                                                                  \
        } while (0)
        MIX();
        for (int r = 1; r < half; r++) {
            for (int i = 0; i < t; i++) s[i] = sbox(s[i], &K[off + i], &out);
            off += t;
            MIX();
        }
        for (int r = 0; r < partial_rounds; r++) {
            s[0] = sbox(s[0], &K[off], &out);
            off += 1;
            MIX();
        }
        for (int r = 0; r < half - 1; r++) {
            for (int i = 0; i < t; i++) s[i] = sbox(s[i], &K[off + i], &out);
            off += t;
            MIX();
        }
        for (int i = 0; i < t; i++) s[i] = sbox(s[i], 0, &out);
        MIX();
#undef MIX
        put(out, s[1]);
        put(digest + 4 * k, s[1]);
    }
    return 0;
}

/* ---- the same schedule, eight hashes at once with AVX-512 IFMA (52-bit limbs) --------------
 *
 * A value is five 52-bit limbs (one __m512i per limb, a lane per hash) in Montgomery form with
 * radix 2^260, kept below 2r: 4r^2 / 2^260 + r < 2r, so a product of such values is below 2r
 * with no final subtraction, and a sum is brought back below 2r by one subtraction of 2r.
 * Constants are five 52-bit limbs each, already times 2^260 mod r. Used where the CPU has
 * avx512ifma (cz_has_ifma); the result is the same as the 64-bit path's. */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define IFMA __attribute__((target("avx512f,avx512ifma"))) static inline

static const uint64_t P52[5] = {0xfffff00000001ULL, 0x02fffe5bfefffULL, 0x9a1d80553bda4ULL, 0x7d483339d8080ULL,
                                0x073eda753299dULL};
static const uint64_t P52x2[5] = {0xffffe00000002ULL, 0x05fffcb7fdfffULL, 0x343b00aa77b48ULL, 0xfa906673b0101ULL,
                                  0x0e7db4ea6533aULL};
static const uint64_t R2_260[5] = {0x99103f29c6cf0ULL, 0x57927663d999eULL, 0xa1c0ed631138bULL, 0x3c829f7715f1bULL,
                                   0x009ff646cc027ULL}; /* 2^520 mod r */
#define NP52 0xffffeffffffffULL /* -r^-1 mod 2^52 */
#define M52 0xfffffffffffffULL

typedef struct { __m512i l[5]; } v5;

IFMA v5 v_const(const uint64_t *c) {
    v5 r;
    for (int j = 0; j < 5; j++) r.l[j] = _mm512_set1_epi64((long long)c[j]);
    return r;
}

IFMA v5 v_mul(v5 a, v5 b) {
    const __m512i zero = _mm512_setzero_si512(), np = _mm512_set1_epi64((long long)NP52);
    const __m512i mask = _mm512_set1_epi64((long long)M52);
    __m512i t0 = zero, t1 = zero, t2 = zero, t3 = zero, t4 = zero, t5;
    for (int i = 0; i < 5; i++) {
        __m512i ai = a.l[i];
        t5 = zero;
        t0 = _mm512_madd52lo_epu64(t0, ai, b.l[0]); t1 = _mm512_madd52hi_epu64(t1, ai, b.l[0]);
        t1 = _mm512_madd52lo_epu64(t1, ai, b.l[1]); t2 = _mm512_madd52hi_epu64(t2, ai, b.l[1]);
        t2 = _mm512_madd52lo_epu64(t2, ai, b.l[2]); t3 = _mm512_madd52hi_epu64(t3, ai, b.l[2]);
        t3 = _mm512_madd52lo_epu64(t3, ai, b.l[3]); t4 = _mm512_madd52hi_epu64(t4, ai, b.l[3]);
        t4 = _mm512_madd52lo_epu64(t4, ai, b.l[4]); t5 = _mm512_madd52hi_epu64(t5, ai, b.l[4]);
        __m512i m = _mm512_madd52lo_epu64(zero, t0, np);
        __m512i p0 = _mm512_set1_epi64((long long)P52[0]), p1 = _mm512_set1_epi64((long long)P52[1]);
        __m512i p2 = _mm512_set1_epi64((long long)P52[2]), p3 = _mm512_set1_epi64((long long)P52[3]);
        __m512i p4 = _mm512_set1_epi64((long long)P52[4]);
        t0 = _mm512_madd52lo_epu64(t0, m, p0); t1 = _mm512_madd52hi_epu64(t1, m, p0);
        t1 = _mm512_madd52lo_epu64(t1, m, p1); t2 = _mm512_madd52hi_epu64(t2, m, p1);
        t2 = _mm512_madd52lo_epu64(t2, m, p2); t3 = _mm512_madd52hi_epu64(t3, m, p2);
        t3 = _mm512_madd52lo_epu64(t3, m, p3); t4 = _mm512_madd52hi_epu64(t4, m, p3);
        t4 = _mm512_madd52lo_epu64(t4, m, p4); t5 = _mm512_madd52hi_epu64(t5, m, p4);
        /* t0 is now a multiple of 2^52: drop it, carrying its high part */
        t0 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
        t1 = t2; t2 = t3; t3 = t4; t4 = t5;
    }
    v5 r;
    t1 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52)); r.l[0] = _mm512_and_si512(t0, mask);
    t2 = _mm512_add_epi64(t2, _mm512_srli_epi64(t1, 52)); r.l[1] = _mm512_and_si512(t1, mask);
    t3 = _mm512_add_epi64(t3, _mm512_srli_epi64(t2, 52)); r.l[2] = _mm512_and_si512(t2, mask);
    t4 = _mm512_add_epi64(t4, _mm512_srli_epi64(t3, 52)); r.l[3] = _mm512_and_si512(t3, mask);
    r.l[4] = t4;
    return r;
}

/* a - m where a >= m, else a (a's limbs normalized, m's too) */
IFMA v5 v_csub(v5 a, const uint64_t *m) {
    const __m512i mask = _mm512_set1_epi64((long long)M52);
    v5 d;
    __m512i carry = _mm512_setzero_si512();
    for (int j = 0; j < 5; j++) {
        __m512i x = _mm512_add_epi64(_mm512_sub_epi64(a.l[j], _mm512_set1_epi64((long long)m[j])), carry);
        carry = _mm512_srai_epi64(x, 52);
        d.l[j] = j < 4 ? _mm512_and_si512(x, mask) : x;
    }
    __mmask8 keep = _mm512_cmplt_epi64_mask(d.l[4], _mm512_setzero_si512()); /* borrowed: a < m */
    for (int j = 0; j < 5; j++) d.l[j] = _mm512_mask_mov_epi64(d.l[j], keep, a.l[j]);
    return d;
}

IFMA v5 v_add(v5 a, v5 b) {
    const __m512i mask = _mm512_set1_epi64((long long)M52);
    v5 s;
    __m512i carry = _mm512_setzero_si512();
    for (int j = 0; j < 5; j++) {
        __m512i x = _mm512_add_epi64(_mm512_add_epi64(a.l[j], b.l[j]), carry);
        carry = _mm512_srli_epi64(x, 52);
        s.l[j] = j < 4 ? _mm512_and_si512(x, mask) : x;
    }
    return v_csub(s, P52x2);
}

/* canonical 4 x 64-bit limbs of eight instances (src[lane] points at each) -> Montgomery */
IFMA v5 v_load(const uint64_t *const src[8]) {
    uint64_t w[4][8];
    for (int lane = 0; lane < 8; lane++)
        for (int j = 0; j < 4; j++) w[j][lane] = src[lane][j];
    const __m512i mask = _mm512_set1_epi64((long long)M52);
    __m512i x0 = _mm512_loadu_si512(w[0]), x1 = _mm512_loadu_si512(w[1]);
    __m512i x2 = _mm512_loadu_si512(w[2]), x3 = _mm512_loadu_si512(w[3]);
    v5 v;
    v.l[0] = _mm512_and_si512(x0, mask);
    v.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x0, 52), _mm512_slli_epi64(x1, 12)), mask);
    v.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x1, 40), _mm512_slli_epi64(x2, 24)), mask);
    v.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x2, 28), _mm512_slli_epi64(x3, 36)), mask);
    v.l[4] = _mm512_srli_epi64(x3, 16);
    return v_mul(v, v_const(R2_260));
}

/* Montgomery (below 2r) -> canonical 4 x 64-bit limbs at dst[lane] (lanes < live) */
IFMA void v_store(v5 a, uint64_t *const dst[8], int live) {
    v5 one;
    one.l[0] = _mm512_set1_epi64(1);
    for (int j = 1; j < 5; j++) one.l[j] = _mm512_setzero_si512();
    v5 c = v_csub(v_mul(a, one), P52);
    uint64_t w[4][8];
    _mm512_storeu_si512(w[0], _mm512_or_si512(c.l[0], _mm512_slli_epi64(c.l[1], 52)));
    _mm512_storeu_si512(w[1], _mm512_or_si512(_mm512_srli_epi64(c.l[1], 12), _mm512_slli_epi64(c.l[2], 40)));
    _mm512_storeu_si512(w[2], _mm512_or_si512(_mm512_srli_epi64(c.l[2], 24), _mm512_slli_epi64(c.l[3], 28)));
    _mm512_storeu_si512(w[3], _mm512_or_si512(_mm512_srli_epi64(c.l[3], 36), _mm512_slli_epi64(c.l[4], 16)));
    for (int lane = 0; lane < live; lane++)
        for (int j = 0; j < 4; j++) dst[lane][j] = w[j][lane];
}

/* sum_i c[i] s[i] for t constants c (five 52-bit limbs each, below r) and values s (below 2r):
 * the products' limb columns summed unreduced (at most 10 t terms below 2^52 a column), then one
 * Montgomery reduction: the sum is below 2 t r^2, and (2 t r^2 + 2^260 r) / 2^260 < 2r for t <= 17
 * (r / 2^260 < 1 / 35). */
IFMA v5 v_dot(int t, const uint64_t *c, const v5 *s) {
    const __m512i zero = _mm512_setzero_si512(), mask = _mm512_set1_epi64((long long)M52);
    __m512i T[10];
    for (int j = 0; j < 10; j++) T[j] = zero;
    for (int i = 0; i < t; i++) {
        for (int a = 0; a < 5; a++) {
            __m512i ca = _mm512_set1_epi64((long long)c[5 * i + a]);
            for (int b = 0; b < 5; b++) {
                T[a + b] = _mm512_madd52lo_epu64(T[a + b], ca, s[i].l[b]);
                T[a + b + 1] = _mm512_madd52hi_epu64(T[a + b + 1], ca, s[i].l[b]);
            }
        }
    }
    const __m512i np = _mm512_set1_epi64((long long)NP52);
    for (int i = 0; i < 5; i++) {
        __m512i m = _mm512_madd52lo_epu64(zero, T[i], np);
        for (int j = 0; j < 5; j++) {
            __m512i pj = _mm512_set1_epi64((long long)P52[j]);
            T[i + j] = _mm512_madd52lo_epu64(T[i + j], m, pj);
            T[i + j + 1] = _mm512_madd52hi_epu64(T[i + j + 1], m, pj);
        }
        T[i + 1] = _mm512_add_epi64(T[i + 1], _mm512_srli_epi64(T[i], 52)); /* T[i] is 0 mod 2^52 */
    }
    v5 r;
    for (int j = 5; j < 9; j++) {
        T[j + 1] = _mm512_add_epi64(T[j + 1], _mm512_srli_epi64(T[j], 52));
        r.l[j - 5] = _mm512_and_si512(T[j], mask);
    }
    r.l[4] = T[9];
    return r;
}

IFMA void v_dense(int t, const uint64_t *m, v5 *s) {
    v5 out[MAX_WIDTH];
    for (int j = 0; j < t; j++) out[j] = v_dot(t, m + 5 * (j * t), s);
    for (int j = 0; j < t; j++) s[j] = out[j];
}

IFMA void v_sparse(int t, const uint64_t *w_hat, const uint64_t *v_rest, v5 *s) {
    v5 s0 = s[0];
    s[0] = v_dot(t, w_hat, s);
    for (int i = 1; i < t; i++) s[i] = v_add(s[i], v_mul(v_const(v_rest + 5 * (i - 1)), s0));
}

IFMA v5 v_sbox(v5 x, const uint64_t *key, uint64_t *out[8], int live) {
    v5 l2 = v_mul(x, x);
    v5 l4 = v_mul(l2, l2);
    v5 l5 = v_mul(l4, x);
    if (key) l5 = v_add(l5, v_const(key));
    v_store(x, out, live);
    for (int k = 0; k < 8; k++) out[k] += 4;
    v_store(l2, out, live);
    for (int k = 0; k < 8; k++) out[k] += 4;
    v_store(l4, out, live);
    for (int k = 0; k < 8; k++) out[k] += 4;
    v_store(l5, out, live);
    for (int k = 0; k < 8; k++) out[k] += 4;
    return l5;
}

int cz_has_ifma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}

/* cz_poseidon_many with the constants as five 52-bit limbs times 2^260 mod r */
__attribute__((target("avx512f,avx512ifma")))
int cz_poseidon_many_ifma(int arity, int full_rounds, int partial_rounds, const uint64_t *s0, const uint64_t *keys,
                          const uint64_t *mds, const uint64_t *pre_sparse, const uint64_t *w_hat, const uint64_t *v_rest,
                          int64_t n, const uint64_t *preimage, uint64_t *aux, const int64_t *aux_offset,
                          uint64_t *digest) {
    const int t = arity + 1, half = full_rounds / 2;
    if (t > MAX_WIDTH || t < 2) return -1;
    for (int64_t k0 = 0; k0 < n; k0 += 8) {
        int live = n - k0 < 8 ? (int)(n - k0) : 8;
        uint64_t *out[8];
        const uint64_t *in[8];
        v5 s[MAX_WIDTH];
        for (int lane = 0; lane < 8; lane++) {
            int64_t k = k0 + (lane < live ? lane : 0); /* dead lanes redo the first instance */
            out[lane] = aux + aux_offset[k];
            in[lane] = preimage + (int64_t)4 * arity * k;
        }
        int off = 2 * t, rnd = 0;
        s[0] = v_const(s0);
        for (int i = 1; i < t; i++) {
            v5 xp = v_add(v_load(in), v_const(keys + 5 * i));
            for (int lane = 0; lane < 8; lane++) in[lane] += 4;
            v5 l2 = v_mul(xp, xp);
            v5 l4 = v_mul(l2, l2);
            s[i] = v_add(v_mul(l4, xp), v_const(keys + 5 * (t + i)));
            v_store(l2, out, live);
            for (int k = 0; k < 8; k++) out[k] += 4;
            v_store(l4, out, live);
            for (int k = 0; k < 8; k++) out[k] += 4;
            v_store(s[i], out, live);
            for (int k = 0; k < 8; k++) out[k] += 4;
        }
#define VMIX()                                                                                 \
        do {                                                                                   \
            if (rnd == half - 1) v_dense(t, pre_sparse, s);                                    \
            else if (rnd > half - 1 && rnd < half + partial_rounds)                            \
                v_sparse(t, w_hat + 5 * (rnd - half) * t, v_rest + 5 * (rnd - half) * (t - 1), s); \
            else v_dense(t, mds, s);                                                           \
            rnd++;                                                                             \
        } while (0)
        VMIX();
        for (int r = 1; r < half; r++) {
            for (int i = 0; i < t; i++) s[i] = v_sbox(s[i], keys + 5 * (off + i), out, live);
            off += t;
            VMIX();
        }
        for (int r = 0; r < partial_rounds; r++) {
            s[0] = v_sbox(s[0], keys + 5 * off, out, live);
            off += 1;
            VMIX();
        }
        for (int r = 0; r < half - 1; r++) {
            for (int i = 0; i < t; i++) s[i] = v_sbox(s[i], keys + 5 * (off + i), out, live);
            off += t;
            VMIX();
        }
        for (int i = 0; i < t; i++) s[i] = v_sbox(s[i], 0, out, live);
        VMIX();
#undef VMIX
        v_store(s[1], out, live);
        uint64_t *dig[8];
        for (int lane = 0; lane < 8; lane++) dig[lane] = digest + 4 * (k0 + (lane < live ? lane : 0));
        v_store(s[1], dig, live);
    }
    return 0;
}
#else
int cz_has_ifma(void) { return 0; }
int cz_poseidon_many_ifma(int arity, int full_rounds, int partial_rounds, const uint64_t *s0, const uint64_t *keys,
                          const uint64_t *mds, const uint64_t *pre_sparse, const uint64_t *w_hat, const uint64_t *v_rest,
                          int64_t n, const uint64_t *preimage, uint64_t *aux, const int64_t *aux_offset,
                          uint64_t *digest) {
    return -1;
}
#endif
