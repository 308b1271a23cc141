// Groth16 TEST keys made on the device from a pre-compiled circuit resident there (r1cs.cuh),
// from secrets the host draws: whoever holds them can forge proofs, so such keys are for tests
// and benchmarks only. For the circuit's rows i < m over the domain of N = 2^log_n >= m:
//   L_i(tau)  the Lagrange basis at tau (an inverse NTT of the powers of tau),
//   u_j = sum_i A[i, j] L_i(tau), v_j and w_j likewise over B and C (column sums: per
//         non-zero the canonical product c L_i, its eight 32-bit limbs added into 64-bit
//         counters of its column with atomics, then one pass that reduces each column mod r),
//   h_i = tau^i Z(tau) / delta (i < N - 1),  l_j = (beta u_j + alpha v_j + w_j) / delta (aux),
//   a = u over the A-dense columns (every input, then the aux the circuit flags),
//   b_g1, b_g2 = v over the B-dense columns (inputs, then aux, as flagged),
// each vector by fixed-base multiplication (fixed_base.cuh). The verifying key is made on the
// host from u, v, w of the input columns (returned canonical). cuzk_plugin/backends/cpu/keygen.py
// is the reference the result equals byte for byte.
#pragma once
#include <memory>

#include "fixed_base.cuh"
#include "prove.cuh"
#include "r1cs.cuh"

// out[i] = value for i < n.
void fill(cudaStream_t stream, fr_t* out, size_t n, const fr_t& value);

// out[i] = L_i(tau) for i < 2^log_n (Montgomery; tau Montgomery, not in the domain) on ctx.stream:
// L_i(tau) = (1/N) sum_k tau^k w^(-i k), the inverse transform of the powers of tau.
void lagrange_at_tau(cz_context& ctx, int log_n, const fr_t& tau, fr_t* out);

// tau, alpha, beta, gamma, delta in Montgomery form, each non-zero.
struct keygen_secrets {
    fr_t tau, alpha, beta, gamma, delta;
};

// The secrets from 5 x 4 uint64 canonical limbs (tau, alpha, beta, gamma, delta), each checked to
// lie in [1, r) (CZ_INVALID_ARGUMENT naming it otherwise).
keygen_secrets secrets_from_canonical(const uint64_t* limbs);

// Milliseconds per stage of a key generation (in order: lagrange, the A columns, the a points,
// the B columns, b_g1, b_g2, the C columns, l, h, total) and device memory in use (total minus
// free, as cudaMemGetInfo reports it) before it started and at its peak.
struct keygen_report {
    static constexpr int kStages = 10;
    double ms[kStages] = {};
    uint64_t used_before = 0, used_peak = 0;
};

// The key of `circuit` for `secrets` on ctx's device. input_sums (host, num_inputs * 3 * 4
// uint64) receives u, v, w of each input column, canonical. Refuses (CZ_INVALID_ARGUMENT) a
// streamed circuit (the column sums read the resident matrices), tau in the domain and a dense
// column of A or B that evaluates to 0. Transients (the Lagrange basis, the column counters,
// scalars: about 64 + 3 x 32 bytes a variable) are freed before it returns and the device's
// memory pool trimmed, so only the key stays. `to_host`: each vector moves to page-locked host
// memory (the key's own_host) as soon as it is made, so the device holds one vector at a time
// (the 32 GiB PoRep key, 47 GB of points, is made on an 80 GB card); the key then streams every
// vector in chunks of `stream_chunk` points.
std::unique_ptr<cz_srs> srs_generate(cz_context& ctx, const cz_circuit& circuit, const keygen_secrets& secrets,
                                     uint64_t* input_sums, keygen_report* report, bool to_host = false,
                                     size_t stream_chunk = size_t(1) << 24);

// Points start .. start + count of vector `which` (0 h, 1 l, 2 a, 3 b_g1, 4 b_g2) to host `out`
// as affine canonical limbs, the identity as zeros (tests compare a device key with the host's).
void srs_read(const cz_srs& srs, int which, size_t start, size_t count, uint64_t* out);
