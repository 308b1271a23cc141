// Test keys made on the device from a resident pre-compiled circuit (see keygen.cuh).

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <string>

#include "keygen.cuh"
#include "ntt.cuh"

namespace {

constexpr unsigned kThreads = 256;

__global__ void fill_kernel(fr_t* out, size_t n, fr_t value) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

// One thread a row of one chunk of a matrix (csr_chunked: its rows + 1 offsets from the chunk's
// first term, its terms from there): each term's product c L_row, canonical (the table holds c
// canonical, the basis is Montgomery: M(c, L R) = c L), its eight 32-bit limbs added to the
// column's eight 64-bit counters. A matrix has fewer than 2^32 terms, so no counter (a sum of
// at most that many limbs, each < 2^32) wraps.
template <class Coeff>
__global__ void column_terms_kernel(const uint32_t* __restrict__ row_off, const uint32_t* __restrict__ cols,
                                    const Coeff* __restrict__ coeff, const fr_t* __restrict__ coeff_canon,
                                    const fr_t* __restrict__ lagrange, uint64_t rows, uint64_t row0,
                                    unsigned long long* counters) {
    const uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const uint32_t end = row_off[row + 1];
    uint32_t k = row_off[row];
    if (k == end) return;
    const fr_t l = lagrange[row0 + row];
    for (; k < end; k++) {
        const fr_t t = coeff_canon[coeff[k]] * l;
        unsigned long long* col = counters + (uint64_t)cols[k] * fr_t::N;
#pragma unroll
        for (int j = 0; j < fr_t::N; j++)
            if (t.v[j]) atomicAdd(col + j, (unsigned long long)t.v[j]);
    }
}

// column_terms_kernel over every chunk of matrix `mat` of `circuit` (resident).
template <class Coeff>
void column_terms(cudaStream_t s, const cz_circuit& circuit, const csr_chunked& mat, const fr_t* lagrange,
                  unsigned long long* counters) {
    for (size_t i = 0; i < circuit.chunks(); i++) {
        const csr_chunk_view v = chunk_of(circuit, mat, i);
        if (v.terms == 0) continue;
        column_terms_kernel<Coeff><<<blocks_for(v.rows, kThreads), kThreads, 0, s>>>(
            v.row_off, v.cols, static_cast<const Coeff*>(v.coeff), circuit.coeff_canon, lagrange, v.rows, v.r0, counters);
        CZ_CHECK_LAUNCH();
    }
}

// 2^(32 i) R^2 mod r for each limb position i: M(x, weight_i) = x 2^(32 i) R, the Montgomery
// form of x 2^(32 i).
struct limb_weights {
    fr_t w[fr_t::N];
};

// out[j] = sum_i counter_i 2^(32 i) mod r (Montgomery) for column j; a counter (< 2^64 < r) is
// a canonical element as it is.
__global__ void column_values_kernel(const unsigned long long* __restrict__ counters, uint64_t n, limb_weights wt,
                                     fr_t* out) {
    const uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const unsigned long long* c = counters + j * fr_t::N;
    fr_t acc = fr_t::zero();
#pragma unroll
    for (int i = 0; i < fr_t::N; i++) {
        const unsigned long long ci = c[i];
        fr_t x = fr_t::zero();
        x.v[0] = (uint32_t)ci;
        x.v[1] = (uint32_t)(ci >> 32);
        acc = acc + x * wt.w[i];
    }
    out[j] = acc;
}

// first = min(offset + i) over the i < n with flags[i] (every i when flags is null) and vals[i] = 0.
__global__ void first_zero_kernel(const fr_t* vals, const uint8_t* flags, uint64_t n, uint64_t offset,
                                  unsigned long long* first) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if ((flags == nullptr || flags[i]) && vals[i].is_zero()) atomicMin(first, (unsigned long long)(offset + i));
}

// sums[3 i + which] = vals[i], canonical, for the input columns i < n.
__global__ void input_columns_kernel(const fr_t* vals, uint64_t n, int which, fr_t* sums) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sums[3 * i + which] = vals[i].from_mont();
}

// acc[i] = ((init ? 0 : acc[i]) + a x[i]) scale (Montgomery throughout).
__global__ void lincomb_kernel(fr_t* acc, const fr_t* x, uint64_t n, fr_t a, fr_t scale, bool init) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t t = a * x[i];
    if (!init) t = t + acc[i];
    acc[i] = t * scale;
}

template <class F>
__global__ void affine_canonical_kernel(const affine_t<F>* in, size_t n, affine_t<F>* out) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = {in[i].x.from_mont(), in[i].y.from_mont()};  // (0, 0) stays (0, 0)
}

// The dense columns' values (inputs then aux, as the prover selects its A and B scalars):
// the inputs flagged by in_flags (every input when null), then the aux flagged by aux_flags.
size_t select_dense(cudaStream_t s, const fr_t* vals, size_t n_in, const uint8_t* in_flags, size_t n_aux,
                    const uint8_t* aux_flags, fr_t* out) {
    size_t k = n_in;
    if (in_flags)
        k = select_flagged(s, vals, in_flags, n_in, out);
    else if (n_in)
        CZ_CHECK(cudaMemcpyAsync(out, vals, n_in * sizeof(fr_t), cudaMemcpyDeviceToDevice, s));
    return k + select_flagged(s, vals + n_in, aux_flags, n_aux, out + k);
}

uint64_t device_used_bytes() {
    size_t free_bytes = 0, total_bytes = 0;
    CZ_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return total_bytes - free_bytes;
}

template <class P>
P* alloc_points(cz_srs& key, size_t count) {
    if (count == 0) return nullptr;
    P* p = nullptr;
    CZ_DEVICE_ALLOC(&p, count * sizeof(P));
    key.owned.push_back(p);
    key.nbytes += count * sizeof(P);
    return p;
}

template <class F>
void read_points(cudaStream_t s, const affine_t<F>* src, size_t count, uint64_t* out) {
    dev_buf<affine_t<F>> tmp(count, s);
    affine_canonical_kernel<F><<<blocks_for(count, 128), 128, 0, s>>>(src, count, tmp.get());
    CZ_CHECK_LAUNCH();
    CZ_CHECK(cudaMemcpyAsync(out, tmp.get(), count * sizeof(affine_t<F>), cudaMemcpyDeviceToHost, s));
    CZ_CHECK(cudaStreamSynchronize(s));
}

}  // namespace

void fill(cudaStream_t stream, fr_t* out, size_t n, const fr_t& value) {
    if (n == 0) return;
    fill_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(out, n, value);
    CZ_CHECK_LAUNCH();
}

void lagrange_at_tau(cz_context& ctx, int log_n, const fr_t& tau, fr_t* out) {
    const size_t n = 1ull << log_n;
    dev_buf<fr_t> pows(n, ctx.stream);
    fill(ctx.stream, pows.get(), n, fr_t::one());
    scale_by_powers(ctx, pows.get(), log_n, tau, fr_from_u64(n).inverse(), false);  // tau^k / N
    ntt_dif(ctx, pows.get(), log_n, true);                                           // bit-reversed out
    bit_reverse(ctx, pows.get(), out, log_n);
}

keygen_secrets secrets_from_canonical(const uint64_t* limbs) {
    const char* names[5] = {"tau", "alpha", "beta", "gamma", "delta"};
    fr_t v[5];
    for (int s = 0; s < 5; s++) {
        std::memcpy(&v[s], limbs + 4 * s, sizeof(fr_t));  // 4 uint64 = 8 uint32, little-endian
        bool below_r = false;
        for (int i = fr_t::N - 1; i >= 0; i--)
            if (v[s].v[i] != fr_config::mod(i)) {
                below_r = v[s].v[i] < fr_config::mod(i);
                break;
            }
        CZ_REQUIRE(below_r && !v[s].is_zero(), std::string("key generation: secret ") + names[s] + " must lie in [1, r)");
        v[s] = v[s].to_mont();
    }
    return {v[0], v[1], v[2], v[3], v[4]};
}

namespace {

// Moves a vector just made (on stream s) to the key's page-locked host copy and frees its device
// memory: the key then streams it (host pointer set, device pointer null).
template <class P>
void park_on_host(cudaStream_t s, cz_srs& key, int which, P*& dev, const P*& host, size_t count) {
    if (count == 0) return;
    const size_t bytes = count * sizeof(P);
    void* h = nullptr;
    CZ_CHECK(cudaHostAlloc(&h, bytes, cudaHostAllocPortable));
    key.own_host->vec[which] = h;  // owned from here, freed with the key on an error below
    key.own_host->n[which] = count;
    key.own_host->nbytes += bytes;
    CZ_CHECK(cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, s));  // after the multiplications on s
    CZ_CHECK(cudaStreamSynchronize(s));
    key.owned.erase(std::find(key.owned.begin(), key.owned.end(), static_cast<void*>(dev)));
    CZ_CHECK(device_free(dev));
    key.nbytes -= bytes;
    dev = nullptr;
    host = static_cast<const P*>(h);
}

}  // namespace

std::unique_ptr<cz_srs> srs_generate(cz_context& ctx, const cz_circuit& circuit, const keygen_secrets& k,
                                     uint64_t* input_sums, keygen_report* report, bool to_host, size_t stream_chunk) {
    using clock = std::chrono::steady_clock;
    const auto t_start = clock::now();
    keygen_report local;
    keygen_report& rep = report ? *report : local;
    cudaStream_t s = ctx.stream;
    CZ_REQUIRE(!circuit.streamed(), "key generation: a TEST key is made from a resident circuit (this one's "
                                    "matrices are streamed from host memory)");
    const size_t m = circuit.m, n_in = circuit.num_inputs, n_aux = circuit.num_aux, n_vars = n_in + n_aux;
    CZ_REQUIRE(m >= 1 && n_in >= 1, "key generation: the circuit needs a row and an input (ONE)");
    CZ_REQUIRE(n_vars < (1ull << 32), "key generation: 2^32 variables or more");
    for (const csr_chunked& mat : circuit.mat)
        CZ_REQUIRE(mat.chunk_term0.back() < (1ull << 32),
                   "key generation: a matrix of 2^32 terms or more (the column counters could wrap)");
    const int log_n = log2_ceil(m);
    CZ_REQUIRE(log_n <= 32, "key generation: the domain exceeds Fr's 2-adicity (2^32)");
    const size_t n = 1ull << log_n;
    const struct {
        const fr_t* value;
        const char* name;
    } named[5] = {{&k.tau, "tau"}, {&k.alpha, "alpha"}, {&k.beta, "beta"}, {&k.gamma, "gamma"}, {&k.delta, "delta"}};
    for (const auto& x : named)
        CZ_REQUIRE(!x.value->is_zero(), std::string("key generation: secret ") + x.name + " is zero");
    fr_t tau_n = k.tau;
    for (int i = 0; i < log_n; i++) tau_n = tau_n.sqr();
    const fr_t z_tau = tau_n - fr_t::one();  // Z(tau) = tau^N - 1
    CZ_REQUIRE(!z_tau.is_zero(), "key generation: tau lies in the domain of size 2^" + std::to_string(log_n) +
                                     ": draw other secrets");
    const fr_t delta_inv = k.delta.inverse();
    limb_weights weights;
    {
        const fr_t two32 = fr_from_u64(1ull << 32);
        fr_t p = fr_t::one();  // Montgomery form of 2^(32 i)
        for (int i = 0; i < fr_t::N; i++) {
            weights.w[i] = p.to_mont();  // 2^(32 i) R^2
            p = p * two32;
        }
    }

    // The memory plan, checked before anything is allocated: the key's points at most (every
    // column dense in A and B) and the working set (per-limb column counters, column values,
    // scalars, the aux accumulator, the Lagrange basis). Refused with the figures, never an
    // allocation failure half way.
    // Made into host memory, the device holds the largest vector alone.
    CZ_REQUIRE(!to_host || stream_chunk >= 1, "key generation: a key made into host memory streams chunks of >= 1 point");
    {
        size_t free_bytes = 0, total_bytes = 0;
        CZ_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        const size_t key_max =
            to_host ? std::max({sizeof(g1_affine_t) * std::max(n - 1, n_aux), sizeof(g1_affine_t) * n_vars,
                                sizeof(g2_affine_t) * n_vars})
                    : sizeof(g1_affine_t) * ((n - 1) + n_aux + 2 * n_vars) + sizeof(g2_affine_t) * n_vars;
        const size_t work = n_vars * (fr_t::N * sizeof(unsigned long long) + 2 * sizeof(fr_t)) + n_aux * sizeof(fr_t) +
                            n * sizeof(fr_t);
        if (key_max + work > free_bytes) {
            char msg[256];
            std::snprintf(msg, sizeof msg,
                          "key generation needs up to %.1f GB (key at most %.1f GB, working set %.1f GB); "
                          "the device has %.1f of %.1f GB free",
                          (key_max + work) / 1e9, key_max / 1e9, work / 1e9, free_bytes / 1e9, total_bytes / 1e9);
            throw cz_error(CZ_OUT_OF_MEMORY, msg);
        }
    }
    rep.used_before = rep.used_peak = device_used_bytes();
    auto t = clock::now();
    auto stage = [&](int i) {
        CZ_CHECK(cudaStreamSynchronize(s));
        rep.ms[i] = ms_since(t);
        rep.used_peak = std::max(rep.used_peak, device_used_bytes());
        t = clock::now();
    };

    auto key = std::make_unique<cz_srs>();
    key->device = ctx.device;
    if (to_host) {
        key->own_host = std::make_unique<cz_host_srs>();
        key->stream_chunk = stream_chunk;
    }
    {
        dev_buf<fr_t> lag(n, s);
        lagrange_at_tau(ctx, log_n, k.tau, lag.get());
        stage(0);

        dev_buf<unsigned long long> counters(n_vars * fr_t::N, s);
        dev_buf<fr_t> vals(n_vars, s), acc(std::max<size_t>(n_aux, 1), s), scalars(n_vars, s), sums(3 * n_in, s);
        dev_buf<unsigned long long> first_bad(1, s);
        fixed_base_table<fq_t> g1(s);

        // vals = the column sums of matrix `which` at tau (Montgomery); the inputs' canonical into sums.
        auto columns = [&](int which) {
            const csr_chunked& mat = circuit.mat[which];
            CZ_CHECK(cudaMemsetAsync(counters.get(), 0, counters.bytes(), s));
            if (circuit.coeff_index_bytes == 2)
                column_terms<uint16_t>(s, circuit, mat, lag.get(), counters.get());
            else
                column_terms<uint32_t>(s, circuit, mat, lag.get(), counters.get());
            column_values_kernel<<<blocks_for(n_vars, kThreads), kThreads, 0, s>>>(counters.get(), n_vars, weights,
                                                                                    vals.get());
            CZ_CHECK_LAUNCH();
            input_columns_kernel<<<blocks_for(n_in, kThreads), kThreads, 0, s>>>(vals.get(), n_in, which, sums.get());
            CZ_CHECK_LAUNCH();
        };
        // A dense column whose value is 0 would make its point the identity: refused.
        auto require_dense_nonzero = [&](const char* name, const uint8_t* in_flags, const uint8_t* aux_flags) {
            CZ_CHECK(cudaMemsetAsync(first_bad.get(), 0xff, sizeof(unsigned long long), s));
            first_zero_kernel<<<blocks_for(n_in, kThreads), kThreads, 0, s>>>(vals.get(), in_flags, n_in, 0,
                                                                              first_bad.get());
            CZ_CHECK_LAUNCH();
            if (n_aux) {
                first_zero_kernel<<<blocks_for(n_aux, kThreads), kThreads, 0, s>>>(vals.get() + n_in, aux_flags, n_aux,
                                                                                   n_in, first_bad.get());
                CZ_CHECK_LAUNCH();
            }
            unsigned long long bad = 0;
            CZ_CHECK(cudaMemcpyAsync(&bad, first_bad.get(), sizeof bad, cudaMemcpyDeviceToHost, s));
            CZ_CHECK(cudaStreamSynchronize(s));
            if (bad != ~0ull)
                throw cz_error(CZ_INVALID_ARGUMENT, "key generation: column " + std::to_string(bad) + " of " + name +
                                                        " evaluates to 0 at tau: draw other secrets");
        };
        // acc (aux columns) = ((init ? 0 : acc) + a vals) scale.
        auto accumulate = [&](const fr_t& a, const fr_t& scale, bool init) {
            if (n_aux == 0) return;
            lincomb_kernel<<<blocks_for(n_aux, kThreads), kThreads, 0, s>>>(acc.get(), vals.get() + n_in, n_aux, a,
                                                                            scale, init);
            CZ_CHECK_LAUNCH();
        };

        // A: u, the a points over every input and the A-dense aux; acc = beta u.
        columns(0);
        require_dense_nonzero("A", nullptr, circuit.a_aux_density);
        accumulate(k.beta, fr_t::one(), true);
        key->n_a = select_dense(s, vals.get(), n_in, nullptr, n_aux, circuit.a_aux_density, scalars.get());
        key->a = alloc_points<g1_affine_t>(*key, key->n_a);
        stage(1);
        fixed_base_mul<fq_t>(s, g1, scalars.get(), key->n_a, key->a);
        if (to_host) park_on_host(s, *key, kSrsA, key->a, key->host_a, key->n_a);
        stage(2);

        // B: v, the b points in G1 and G2 over the B-dense columns; acc += alpha v.
        columns(1);
        require_dense_nonzero("B", circuit.b_input_density, circuit.b_aux_density);
        accumulate(k.alpha, fr_t::one(), false);
        const size_t nb = select_dense(s, vals.get(), n_in, circuit.b_input_density, n_aux, circuit.b_aux_density,
                                       scalars.get());
        key->n_b_g1 = key->n_b_g2 = nb;
        key->b_g1 = alloc_points<g1_affine_t>(*key, nb);
        stage(3);
        fixed_base_mul<fq_t>(s, g1, scalars.get(), nb, key->b_g1);
        if (to_host) park_on_host(s, *key, kSrsBG1, key->b_g1, key->host_b_g1, nb);
        stage(4);
        key->b_g2 = alloc_points<g2_affine_t>(*key, nb);
        {
            fixed_base_table<fq2_t> g2(s);
            fixed_base_mul<fq2_t>(s, g2, scalars.get(), nb, key->b_g2);
        }
        if (to_host) park_on_host(s, *key, kSrsBG2, key->b_g2, key->host_b_g2, nb);
        stage(5);

        // C: w; acc = (beta u + alpha v + w) / delta over the aux columns.
        columns(2);
        accumulate(fr_t::one(), delta_inv, false);
        CZ_CHECK(cudaMemcpyAsync(input_sums, sums.get(), sums.bytes(), cudaMemcpyDeviceToHost, s));
        stage(6);
        counters = dev_buf<unsigned long long>();
        vals = dev_buf<fr_t>();
        lag = dev_buf<fr_t>();

        key->n_l = n_aux;
        key->l = alloc_points<g1_affine_t>(*key, n_aux);
        fixed_base_mul<fq_t>(s, g1, acc.get(), n_aux, key->l);
        if (to_host) park_on_host(s, *key, kSrsL, key->l, key->host_l, n_aux);
        stage(7);
        acc = dev_buf<fr_t>();

        // h_i = tau^i Z(tau) / delta, i < N - 1.
        key->n_h = n - 1;
        key->h = alloc_points<g1_affine_t>(*key, key->n_h);
        if (scalars.count < n) scalars = dev_buf<fr_t>(n, s);
        fill(s, scalars.get(), n, fr_t::one());
        scale_by_powers(ctx, scalars.get(), log_n, k.tau, z_tau * delta_inv, false);
        fixed_base_mul<fq_t>(s, g1, scalars.get(), key->n_h, key->h);
        if (to_host) park_on_host(s, *key, kSrsH, key->h, key->host_h, key->n_h);
        stage(8);
    }
    // Give the transients back: the pool keeps freed blocks for repeated proofs, which would
    // hold tens of GB for nothing after a full-size key; the transform's twiddle table too
    // (2 GB at 2^27), which the lane's residency plan does not count.
    twiddles_release(ctx);
    CZ_CHECK(cudaStreamSynchronize(s));
    cudaMemPool_t pool;
    CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, ctx.device));
    CZ_CHECK(cudaMemPoolTrimTo(pool, 0));
    rep.ms[9] = ms_since(t_start);
    return key;
}

void srs_read(const cz_srs& srs, int which, size_t start, size_t count, uint64_t* out) {
    CZ_REQUIRE(which >= 0 && which < 5, "srs_read: vector index must be 0 (h) .. 4 (b_g2)");
    const size_t sizes[5] = {srs.n_h, srs.n_l, srs.n_a, srs.n_b_g1, srs.n_b_g2};
    CZ_REQUIRE(start <= sizes[which] && count <= sizes[which] - start,
               "srs_read: points " + std::to_string(start) + " + " + std::to_string(count) + " outside the vector of " +
                   std::to_string(sizes[which]));
    if (count == 0) return;
    CZ_CHECK(cudaSetDevice(srs.device));
    cuda_stream stream(0);
    // A streamed vector is read from its host copy (page-locked memory is mapped for the device).
    if (which == 4) {
        read_points<fq2_t>(stream.s, (srs.b_g2 ? srs.b_g2 : srs.host_b_g2) + start, count, out);
    } else {
        const g1_affine_t* vec[4] = {srs.h ? srs.h : srs.host_h, srs.l ? srs.l : srs.host_l,
                                     srs.a ? srs.a : srs.host_a, srs.b_g1 ? srs.b_g1 : srs.host_b_g1};
        read_points<fq_t>(stream.s, vec[which] + start, count, out);
    }
}
