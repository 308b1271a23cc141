// The verifiable benchmark instance (see instance.cuh).
#include "gen.cuh"
#include "instance.cuh"
#include "ntt.cuh"

namespace {

// a, b, c of the circuit in instance.cuh (canonical): inputs x_i -> (x_i, 0, 0); aux y_j ->
// (y_j, y_j, y_j^2). M(y R, y) = y^2 with M the Montgomery product.
__global__ void witness_rows_kernel(const fr_t* inputs, size_t n_inputs, const fr_t* aux, size_t n, fr_t* a, fr_t* b,
                                    fr_t* c) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < n_inputs) {
        a[i] = inputs[i], b[i] = fr_t::zero(), c[i] = fr_t::zero();
    } else {
        fr_t y = aux[i - n_inputs];
        a[i] = y, b[i] = y, c[i] = y.to_mont() * y;
    }
}

}  // namespace

bench_instance::bench_instance(cz_context& ctx, int log_n, size_t n_inputs, const bench_secrets& k)
    : ctx_(ctx), log_n_(log_n), n_inputs_(n_inputs) {
    cudaStream_t s = ctx.stream;
    const size_t n = 1ull << log_n;
    CZ_REQUIRE(log_n >= 1 && n_inputs >= 1 && n_inputs < n, "benchmark instance: need 1 <= inputs < 2^log_n");
    fr_t tau_n = k.tau;
    for (int i = 0; i < log_n; i++) tau_n = tau_n.sqr();
    const fr_t z_tau = tau_n - fr_t::one();  // Z(tau) = tau^N - 1
    CZ_REQUIRE(!z_tau.is_zero(), "benchmark instance: tau lies in the domain");

    lagrange_ = dev_buf<fr_t>(n, s);
    lagrange_at_tau(ctx, log_n, k.tau, lagrange_.get());
    dev_buf<fr_t> scalars(n, s);

    srs_ = std::make_unique<cz_srs>();
    cz_srs& key = *srs_;
    key.device = ctx.device;
    const size_t n_aux = n - n_inputs;
    key.n_h = n - 1, key.n_l = n_aux, key.n_a = n, key.n_b_g1 = n_aux, key.n_b_g2 = n_aux;
    auto alloc = [&](auto*& p, size_t count) {
        CZ_DEVICE_ALLOC(&p, count * sizeof(*p));  // counted under a memory limit, as a loaded key
        key.owned.push_back(p);
        key.nbytes += count * sizeof(*p);
    };
    alloc(key.h, key.n_h);
    alloc(key.l, key.n_l);
    alloc(key.a, key.n_a);
    alloc(key.b_g2, key.n_b_g2);
    key.b_g1 = key.a + n_inputs;  // v(y_j) = u(y_j): the same points

    fill(s, scalars.get(), n, fr_t::one());
    scale_by_powers(ctx, scalars.get(), log_n, k.tau, z_tau * k.delta.inverse(), false);
    fixed_base_mul<fq_t>(s, scalars.get(), key.n_h, key.h);
    CZ_CHECK(cudaMemcpyAsync(scalars.get(), lagrange_.get() + n_inputs, n_aux * sizeof(fr_t),
                             cudaMemcpyDeviceToDevice, s));
    scale_by_powers(ctx, scalars.get(), log_n, fr_t::one(), (k.alpha + k.beta) * k.delta.inverse(), false);
    fixed_base_mul<fq_t>(s, scalars.get(), key.n_l, key.l);
    fixed_base_mul<fq_t>(s, lagrange_.get(), key.n_a, key.a);
    fixed_base_mul<fq2_t>(s, lagrange_.get() + n_inputs, key.n_b_g2, key.b_g2);
    CZ_CHECK(cudaStreamSynchronize(s));
}

fr_t bench_instance::make_witness(double frac_bits, uint64_t seed, partition_buffers& w) {
    cudaStream_t s = ctx_.stream;
    const size_t n = 1ull << log_n_, n_aux = n - n_inputs_;
    w.fr_bufs.clear();
    w.flag_bufs.clear();
    for (size_t count : {n, n, n, n_inputs_, n_aux}) w.fr_bufs.emplace_back(count, s);
    fr_t *a = w.fr_bufs[0].get(), *b = w.fr_bufs[1].get(), *c = w.fr_bufs[2].get();
    fr_t *inputs = w.fr_bufs[3].get(), *aux = w.fr_bufs[4].get();
    random_scalars(s, inputs, n_inputs_, seed, 0.0);
    const fr_t one = fr_t::raw_u32(1);  // x_0 = ONE (canonical)
    CZ_CHECK(cudaMemcpyAsync(inputs, &one, sizeof one, cudaMemcpyHostToDevice, s));
    random_scalars(s, aux, n_aux, seed + 1, frac_bits);
    witness_rows_kernel<<<blocks_for(n, 256), 256, 0, s>>>(inputs, n_inputs_, aux, n, a, b, c);
    CZ_CHECK_LAUNCH();
    for (size_t count : {n_aux, n_inputs_, n_aux}) w.flag_bufs.emplace_back(count, s);
    CZ_CHECK(cudaMemsetAsync(w.flag_bufs[0].get(), 1, n_aux, s));       // A: every aux value
    CZ_CHECK(cudaMemsetAsync(w.flag_bufs[1].get(), 0, n_inputs_, s));   // B: no input
    CZ_CHECK(cudaMemsetAsync(w.flag_bufs[2].get(), 1, n_aux, s));       // B: every aux value
    partition_device& p = w.part;
    p.log_n = log_n_;
    p.a = a, p.b = b, p.c = c;
    p.inputs = inputs, p.n_inputs = n_inputs_;
    p.aux = aux, p.n_aux = n_aux;
    p.a_aux_density = w.flag_bufs[0].get(), p.b_input_density = w.flag_bufs[1].get();
    p.b_aux_density = w.flag_bufs[2].get();
    return dot_mod_r(s, c, lagrange_.get(), n);  // w(ONE) = sum_i c_i L_i(tau); syncs
}
