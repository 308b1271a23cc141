// Probe (not part of the library): Montgomery multiplication in Fq with 14 limbs of 28 bits,
// column by column (product scanning), every limb product a 32x32->64 multiply-add into a
// 64-bit column sum. Columns cannot overflow (28 products < 2^56 plus a carry < 2^36 stay
// below 2^61), so no carry chain runs inside a column: the question is how many SASS
// instructions that costs against the 32-bit-limb CIOS in field.cuh (1280 for Fq).
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I cuzk_plugin/backends/cuda/kernels bench/probes/fq_mul28.cu -o /tmp/fq28
//   /tmp/fq28 | python3 bench/probes/check_fq_mul28.py      # host run of the same code, checked with Python ints
//   nvcc ... -cubin -o /tmp/fq28.cubin && cuobjdump -sass /tmp/fq28.cubin   # instruction counts
#include <cstdint>
#include <cstdio>
#include <random>

constexpr int L = 14;  // limbs
constexpr uint32_t MASK = (1u << 28) - 1;

struct fq28 {
    uint32_t v[L];
};

// Filled at start-up on the host from the 381-bit modulus (see main); copied to the device.
__constant__ uint32_t d_p[L];
static uint32_t h_p[L];
__constant__ uint32_t d_pinv;
static uint32_t h_pinv;

// r = a b / 2^392 mod p (r < 2p), a, b < 2p with limbs < 2^28.
template <bool DEVICE>
__host__ __device__ __forceinline__ fq28 mul28(const fq28& a, const fq28& b, const uint32_t* p, uint32_t pinv) {
    uint32_t m[L];
    fq28 r;
    uint64_t col = 0;
#pragma unroll
    for (int k = 0; k < 2 * L - 1; k++) {
#pragma unroll
        for (int i = 0; i < L; i++) {
            int j = k - i;
            if (j >= 0 && j < L) col += (uint64_t)a.v[i] * b.v[j];
        }
#pragma unroll
        for (int i = 0; i < L; i++) {  // m_i p_j for the m already known (i < k)
            int j = k - i;
            if (i < k && j >= 0 && j < L) col += (uint64_t)m[i] * p[j];
        }
        if (k < L) {
            m[k] = ((uint32_t)col * pinv) & MASK;
            col += (uint64_t)m[k] * p[0];  // low 28 bits become 0
        } else {
            r.v[k - L] = (uint32_t)col & MASK;
        }
        col >>= 28;
    }
    r.v[L - 1] = (uint32_t)col;
    return r;
}

// The modulus as immediates, as a library kernel would have it.
__device__ __forceinline__ fq28 mul28_const(const fq28& a, const fq28& b) {
    const uint32_t p[L] = {0xfffaaab, 0xfefffff, 0x3ffffb9, 0xfffeb15, 0x6241eab, 0xa0f6b0f, 0xf6730d2,
                           0xf38512b, 0x4774b84, 0x4bacd76, 0xba7b643, 0xe69a4b1, 0x1ea397f, 0x001a011};
    return mul28<true>(a, b, p, 0xffcfffd);
}

__global__ void k_mul28(fq28* x, int n) {
    fq28 a = x[threadIdx.x], b = x[threadIdx.x + 32];
    x[threadIdx.x] = mul28_const(a, b);
}

// Ten dependent products, as in one mixed addition, for a per-product count.
__global__ void k_mul28_x10(fq28* x, int n) {
    fq28 a = x[threadIdx.x], b = x[threadIdx.x + 32];
#pragma unroll 1
    for (int i = 0; i < n; i++) a = mul28_const(a, b);
    x[threadIdx.x] = a;
}

// Host: limbs of a 384-bit little-endian array of 32-bit words.
static fq28 from_words(const uint32_t* w) {
    fq28 r{};
    for (int i = 0; i < L; i++) {
        int bit = 28 * i;
        uint64_t lo = bit / 32 < 12 ? w[bit / 32] : 0, hi = bit / 32 + 1 < 12 ? w[bit / 32 + 1] : 0;
        r.v[i] = (uint32_t)(((hi << 32 | lo) >> (bit % 32)) & MASK);
    }
    return r;
}

int main() {
    const uint32_t pw[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
                             0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
    fq28 p = from_words(pw);
    for (int i = 0; i < L; i++) h_p[i] = p.v[i];
    // -p^-1 mod 2^28 by Newton iteration on p0.
    uint32_t inv = 1;
    for (int i = 0; i < 5; i++) inv *= 2 - h_p[0] * inv;
    h_pinv = (0u - inv) & MASK;
    std::mt19937_64 rng(7);
    for (int t = 0; t < 200; t++) {
        uint32_t aw[12], bw[12];
        for (int i = 0; i < 12; i++) aw[i] = (uint32_t)rng(), bw[i] = (uint32_t)rng();
        aw[11] &= 0x0fffffff, bw[11] &= 0x0fffffff;  // < 2^380 < p
        fq28 a = from_words(aw), b = from_words(bw);
        fq28 r = mul28<false>(a, b, h_p, h_pinv);
        for (int i = 0; i < L; i++) std::printf("%07x%s", a.v[i], i + 1 < L ? "," : " ");
        for (int i = 0; i < L; i++) std::printf("%07x%s", b.v[i], i + 1 < L ? "," : " ");
        for (int i = 0; i < L; i++) std::printf("%x%s", r.v[i], i + 1 < L ? "," : "\n");
    }
    return 0;
}
