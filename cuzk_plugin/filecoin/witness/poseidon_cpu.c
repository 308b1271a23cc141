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
