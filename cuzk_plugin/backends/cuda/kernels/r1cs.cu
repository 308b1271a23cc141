// R1CS evaluation on the device (see r1cs.cuh): one thread a row, all three matrices in one
// launch. Filecoin's rows are short (most have one to three terms) and their values mostly
// bits, so the loop skips what costs a product where it can: a zero value adds nothing, a
// coefficient of 1 or -1 adds or subtracts the value, a value of 1 adds the coefficient; only
// the rest take one Montgomery product, of the coefficient in Montgomery form with the
// canonical value, which leaves the canonical product (M(c R, z) = c z). Sums stay canonical.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "r1cs.cuh"

namespace {

__device__ __forceinline__ bool is_one_canonical(const fr_t& x) {
    uint32_t high = 0;
#pragma unroll
    for (int j = 1; j < fr_t::N; j++) high |= x.v[j];
    return high == 0 && x.v[0] == 1;
}

struct r1cs_tables {
    csr_device mat[3];
    const fr_t* coeff_mont;
    const fr_t* coeff_canon;
    const uint8_t* kinds;
};

__global__ void r1cs_rows_kernel(r1cs_tables t, const fr_t* __restrict__ z, uint64_t m, fr_t* a, fr_t* b, fr_t* c) {
    const uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    // A constant index per branch keeps the tables in the parameter space (a run-time index
    // into a parameter array makes a local copy).
    const csr_device mat = blockIdx.y == 0 ? t.mat[0] : (blockIdx.y == 1 ? t.mat[1] : t.mat[2]);
    fr_t acc = fr_t::zero();
    const uint64_t end = mat.row_ptr[row + 1];
    for (uint64_t k = mat.row_ptr[row]; k < end; k++) {
        const fr_t v = z[mat.cols[k]];
        if (v.is_zero()) continue;
        const uint32_t ci = mat.coeff[k];
        const uint8_t kind = t.kinds[ci];
        if (kind == COEFF_ONE)
            acc = acc + v;
        else if (kind == COEFF_MINUS_ONE)
            acc = acc - v;
        else if (is_one_canonical(v))
            acc = acc + t.coeff_canon[ci];
        else
            acc = acc + t.coeff_mont[ci] * v;
    }
    fr_t* out = blockIdx.y == 0 ? a : (blockIdx.y == 1 ? b : c);
    out[row] = acc;
}

__global__ void coeff_table_kernel(fr_t* mont, const fr_t* canon, uint8_t* kinds, size_t k) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= k) return;
    const fr_t x = canon[i];
    const fr_t minus_one = fr_t::zero() - fr_t::raw_u32(1);
    kinds[i] = is_one_canonical(x) ? COEFF_ONE : (x == minus_one ? COEFF_MINUS_ONE : COEFF_OTHER);
    mont[i] = x.to_mont();
}

// M(a R, b) = a b: one Montgomery product a row, compared with c.
__global__ void r1cs_check_kernel(const fr_t* __restrict__ a, const fr_t* __restrict__ b, const fr_t* __restrict__ c,
                                  uint64_t m, unsigned long long* count, unsigned long long* first) {
    const uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    if (a[row].to_mont() * b[row] == c[row]) return;
    atomicAdd(count, 1ull);
    atomicMin(first, (unsigned long long)row);
}

}  // namespace

r1cs_violations r1cs_check(cudaStream_t stream, const fr_t* a, const fr_t* b, const fr_t* c, size_t m) {
    dev_buf<unsigned long long> out(2, stream);
    const unsigned long long init[2] = {0ull, ~0ull};
    CZ_CHECK(cudaMemcpyAsync(out.get(), init, sizeof init, cudaMemcpyHostToDevice, stream));
    if (m) {
        r1cs_check_kernel<<<blocks_for(m, 256), 256, 0, stream>>>(a, b, c, m, out.get(), out.get() + 1);
        CZ_CHECK_LAUNCH();
    }
    unsigned long long host[2];
    CZ_CHECK(cudaMemcpyAsync(host, out.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    return {host[0], host[1]};
}

cz_circuit::~cz_circuit() {
    cudaSetDevice(device);
    for (void* p : owned) cudaFree(p);
}

std::unique_ptr<cz_circuit> circuit_load(cz_context& ctx, size_t m, size_t num_inputs, size_t num_aux,
                                         const uint64_t* coeffs, size_t n_coeffs, const csr_host mats[3],
                                         const uint8_t* a_aux_density, const uint8_t* b_input_density,
                                         const uint8_t* b_aux_density) {
    CZ_REQUIRE(m >= 1, "a circuit needs at least one constraint");
    auto c = std::make_unique<cz_circuit>();
    c->device = ctx.device, c->m = m, c->num_inputs = num_inputs, c->num_aux = num_aux, c->n_coeffs = n_coeffs;
    // A device copy of `count` elements of `src` (one element at least: kernels read the pointers).
    auto copy = [&](const auto* src, size_t count) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
        T* dst = nullptr;
        CZ_CHECK(cudaMalloc(reinterpret_cast<void**>(&dst), std::max<size_t>(count, 1) * sizeof(T)));
        c->owned.push_back(dst);
        c->nbytes += std::max<size_t>(count, 1) * sizeof(T);
        if (count) CZ_CHECK(cudaMemcpy(dst, src, count * sizeof(T), cudaMemcpyHostToDevice));
        return dst;
    };
    for (int i = 0; i < 3; i++) {
        c->mat[i].row_ptr = copy(mats[i].row_ptr, m + 1);
        c->mat[i].cols = copy(mats[i].cols, mats[i].nnz);
        c->mat[i].coeff = copy(mats[i].coeff, mats[i].nnz);
        c->mat[i].nnz = mats[i].nnz;
    }
    const fr_t* canon = copy(reinterpret_cast<const fr_t*>(coeffs), n_coeffs);
    fr_t* mont = nullptr;
    uint8_t* kinds = nullptr;
    CZ_CHECK(cudaMalloc(reinterpret_cast<void**>(&mont), std::max<size_t>(n_coeffs, 1) * sizeof(fr_t)));
    c->owned.push_back(mont);
    CZ_CHECK(cudaMalloc(reinterpret_cast<void**>(&kinds), std::max<size_t>(n_coeffs, 1)));
    c->owned.push_back(kinds);
    c->nbytes += std::max<size_t>(n_coeffs, 1) * (sizeof(fr_t) + 1);
    if (n_coeffs) {
        coeff_table_kernel<<<blocks_for(n_coeffs, 128), 128, 0, ctx.stream>>>(mont, canon, kinds, n_coeffs);
        CZ_CHECK_LAUNCH();
        CZ_CHECK(cudaStreamSynchronize(ctx.stream));
    }
    c->coeff_canon = canon, c->coeff_mont = mont, c->coeff_kinds = kinds;
    c->a_aux_density = copy(a_aux_density, num_aux);
    c->b_input_density = copy(b_input_density, num_inputs);
    c->b_aux_density = copy(b_aux_density, num_aux);
    return c;
}

void r1cs_evaluate(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c,
                   size_t n) {
    CZ_REQUIRE(n >= circuit.m, "R1CS output shorter than the circuit's rows");
    const size_t m = circuit.m;
    if (n > m)
        for (fr_t* out : {a, b, c}) CZ_CHECK(cudaMemsetAsync(out + m, 0, (n - m) * sizeof(fr_t), stream));
    r1cs_tables t{{circuit.mat[0], circuit.mat[1], circuit.mat[2]}, circuit.coeff_mont, circuit.coeff_canon,
                  circuit.coeff_kinds};
    constexpr unsigned kThreads = 256;
    dim3 grid(blocks_for(m, kThreads), 3);
    r1cs_rows_kernel<<<grid, kThreads, 0, stream>>>(t, z, m, a, b, c);
    CZ_CHECK_LAUNCH();
}
