// R1CS evaluation on the device (see r1cs.cuh): one thread a row, all three matrices in one
// launch. Filecoin's rows are short (most have one to three terms) and their values mostly
// bits, so the loop skips what costs a product where it can: a zero value adds nothing, a
// coefficient of 1 or -1 adds or subtracts the value, a value of 1 adds the coefficient; only
// the rest take one Montgomery product, of the coefficient in Montgomery form with the
// canonical value, which leaves the canonical product (M(c R, z) = c z). Sums stay canonical.
// A streamed circuit runs the same kernel once a chunk of rows, on the chunk's compact copy.
#include <algorithm>
#include <cstring>
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

// One chunk of the three matrices as a launch reads them (csr_chunked): each matrix's rows + 1
// offsets from the chunk's first term, and its terms from that first term.
template <class Coeff>
struct r1cs_tables {
    const uint32_t* row_off[3];
    const uint32_t* cols[3];
    const Coeff* coeff[3];
    const fr_t* coeff_mont;
    const fr_t* coeff_canon;
    const uint8_t* kinds;
};

// Rows row0 .. row0 + rows of the outputs from rows 0 .. rows of the tables' matrices: matrix
// first + blockIdx.y (the launch's gridDim.y matrices from `first`).
template <class Coeff>
__global__ void r1cs_rows_kernel(r1cs_tables<Coeff> t, const fr_t* __restrict__ z, uint64_t rows, uint64_t row0,
                                 fr_t* a, fr_t* b, fr_t* c, uint32_t first) {
    const uint64_t row = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const uint32_t which = first + blockIdx.y;
    // A constant index per branch keeps the tables in the parameter space (a run-time index
    // into a parameter array makes a local copy).
    const uint32_t* row_off = which == 0 ? t.row_off[0] : (which == 1 ? t.row_off[1] : t.row_off[2]);
    const uint32_t* cols = which == 0 ? t.cols[0] : (which == 1 ? t.cols[1] : t.cols[2]);
    const Coeff* coeff = which == 0 ? t.coeff[0] : (which == 1 ? t.coeff[1] : t.coeff[2]);
    fr_t acc = fr_t::zero();
    const uint32_t end = row_off[row + 1];
    for (uint32_t k = row_off[row]; k < end; k++) {
        const fr_t v = z[cols[k]];
        if (v.is_zero()) continue;
        const uint32_t ci = coeff[k];
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
    fr_t* out = which == 0 ? a : (which == 1 ? b : c);
    out[row0 + row] = acc;
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

template <class Coeff>
void launch_rows(cudaStream_t stream, const r1cs_tables<Coeff>& t, const fr_t* z, size_t rows, size_t row0, fr_t* a,
                 fr_t* b, fr_t* c, matrix_range which) {
    constexpr unsigned kThreads = 256;
    r1cs_rows_kernel<Coeff><<<dim3(blocks_for(rows, kThreads), which.count), kThreads, 0, stream>>>(
        t, z, rows, row0, a, b, c, which.first);
    CZ_CHECK_LAUNCH();
}

// Typed arrays laid out one after another from `base`: run over base 0 to measure a layout,
// then over its allocation. Larger types are taken first, so every array stays aligned.
struct carver {
    uintptr_t base = 0;
    size_t used = 0;
    template <class T>
    T* take(size_t count) {
        T* p = reinterpret_cast<T*>(base + used);
        used += count * sizeof(T);
        return p;
    }
};

// The compact form's arrays laid out from k's base: every matrix's offsets, then its columns,
// then its coefficient indices (the uint32 arrays first: every array stays aligned).
struct compact_arrays {
    uint32_t *row_off[3], *cols[3];
    void* coeff[3];
};
compact_arrays lay_out_compact(carver& k, size_t m, size_t chunks, const csr_host mats[3], int index_bytes) {
    compact_arrays a;
    for (int i = 0; i < 3; i++) a.row_off[i] = k.take<uint32_t>(m + chunks);
    for (int i = 0; i < 3; i++) a.cols[i] = k.take<uint32_t>(mats[i].nnz);
    for (int i = 0; i < 3; i++)
        a.coeff[i] = index_bytes == 2 ? static_cast<void*>(k.take<uint16_t>(mats[i].nnz))
                                      : static_cast<void*>(k.take<uint32_t>(mats[i].nnz));
    return a;
}

// Writes the caller's matrices in the compact form into `a`, and sets c's chunk starts and most
// terms a chunk: straight into host memory, or (`device`) a chunk at a time through small host
// buffers copied to the device (no host copy of the whole). Coefficient indices are < n_coeffs
// (the caller checked them), so a table of at most 2^16 entries takes them as uint16.
void fill_compact(cz_circuit& c, const csr_host mats[3], const compact_arrays& a, bool device) {
    const size_t m = c.m, rows = c.chunk_rows, chunks = c.chunks();
    std::vector<uint8_t> staging;
    // Where `count` values of T bound for `dst` are written, and their copy to `dst` once written.
    auto place = [&](auto* dst, size_t count) {
        if (!device) return dst;
        staging.resize(count * sizeof(*dst));
        return reinterpret_cast<decltype(dst)>(staging.data());
    };
    auto copy = [&](void* dst, const void* src, size_t bytes) {
        if (dst == src || bytes == 0) return;
        if (device)
            CZ_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
        else
            std::memcpy(dst, src, bytes);
    };
    for (int i = 0; i < 3; i++) {
        const csr_host& h = mats[i];
        std::vector<uint64_t>& term0 = c.mat[i].chunk_term0;
        term0.resize(chunks + 1);
        for (size_t ci = 0; ci < chunks; ci++) {
            const size_t r0 = ci * rows, r1 = std::min(r0 + rows, m);
            const uint64_t first = h.row_ptr[r0], terms = h.row_ptr[r1] - first;
            CZ_REQUIRE(terms <= UINT32_MAX, "a chunk of the circuit holds 2^32 terms or more: use fewer rows a chunk");
            term0[ci] = first;
            c.max_terms[i] = std::max<size_t>(c.max_terms[i], terms);
            uint32_t* const off_dst = a.row_off[i] + r0 + ci;
            uint32_t* const off = place(off_dst, r1 - r0 + 1);
            for (size_t r = r0; r <= r1; r++) off[r - r0] = (uint32_t)(h.row_ptr[r] - first);
            copy(off_dst, off, (r1 - r0 + 1) * sizeof(uint32_t));
            if (c.coeff_index_bytes == 2) {
                uint16_t* const idx_dst = static_cast<uint16_t*>(a.coeff[i]) + first;
                uint16_t* const idx = place(idx_dst, terms);
                for (size_t k = 0; k < terms; k++) idx[k] = (uint16_t)h.coeff[first + k];
                copy(idx_dst, idx, terms * sizeof(uint16_t));
            } else {
                copy(static_cast<uint32_t*>(a.coeff[i]) + first, h.coeff + first, terms * sizeof(uint32_t));
            }
        }
        term0[chunks] = h.row_ptr[m];
        copy(a.cols[i], h.cols, h.nnz * sizeof(uint32_t));
    }
}

// c's matrices in the compact form: in a page-locked host block (streamed), or in one device
// block (resident).
void load_matrices(cz_circuit& c, const csr_host mats[3], bool streamed) {
    carver size;
    lay_out_compact(size, c.m, c.chunks(), mats, c.coeff_index_bytes);
    uintptr_t base = 0;
    if (streamed) {
        CZ_CHECK(cudaHostAlloc(&c.host_block, size.used, cudaHostAllocPortable));
        c.host_bytes = size.used;
        base = reinterpret_cast<uintptr_t>(c.host_block);
    } else {
        void* block = nullptr;
        CZ_DEVICE_ALLOC(&block, size.used);
        c.owned.push_back(block);
        c.nbytes += size.used;
        base = reinterpret_cast<uintptr_t>(block);
    }
    carver at{base};
    const compact_arrays where = lay_out_compact(at, c.m, c.chunks(), mats, c.coeff_index_bytes);
    fill_compact(c, mats, where, !streamed);
    for (int i = 0; i < 3; i++) c.mat[i].row_off = where.row_off[i], c.mat[i].cols = where.cols[i], c.mat[i].coeff = where.coeff[i];
}

// On scope exit, an error included: `stream` waits for everything queued on `copier`, then
// `done` is recorded on it, marking the end of all of an evaluation's work.
struct evaluation_end {
    cudaStream_t stream, copier;
    cudaEvent_t joined, done;
    ~evaluation_end() {  // a destructor cannot throw; errors resurface at the next check
        if (cudaEventRecord(joined, copier) == cudaSuccess) cudaStreamWaitEvent(stream, joined, 0);
        cudaEventRecord(done, stream);
    }
};

// The rows a chunk at a time: chunk i + 1 is copied (on a stream of its own, into the other
// chunk buffer, once chunk i - 1's kernel has read it) while chunk i is evaluated.
template <class Coeff>
void evaluate_streamed(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c,
                       matrix_range which) {
    std::lock_guard<std::mutex> lock(circuit.evaluating);
    const size_t nchunks = circuit.chunks();
    int priority = 0;
    CZ_CHECK(cudaStreamGetPriority(stream, &priority));
    cuda_stream copier(priority);
    cuda_event copied[2], consumed[2], joined;
    evaluation_end end{stream, copier.s, joined.e, circuit.evaluated};
    // The previous evaluation, on whichever stream, is done with the chunk buffers.
    CZ_CHECK(cudaStreamWaitEvent(copier.s, circuit.evaluated, 0));
    auto copy = [&](size_t i) {
        const csr_chunk& buf = circuit.chunk[i % 2];
        if (i >= 2) CZ_CHECK(cudaStreamWaitEvent(copier.s, consumed[i % 2].e, 0));
        for (int k = which.first; k < which.first + which.count; k++) {
            const csr_chunk_view v = chunk_of(circuit, circuit.mat[k], i);
            CZ_CHECK(cudaMemcpyAsync(buf.row_off[k], v.row_off, (v.rows + 1) * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                     copier.s));
            if (v.terms == 0) continue;
            CZ_CHECK(cudaMemcpyAsync(buf.cols[k], v.cols, v.terms * sizeof(uint32_t), cudaMemcpyHostToDevice, copier.s));
            CZ_CHECK(cudaMemcpyAsync(buf.coeff[k], v.coeff, v.terms * sizeof(Coeff), cudaMemcpyHostToDevice, copier.s));
        }
        CZ_CHECK(cudaEventRecord(copied[i % 2].e, copier.s));
    };
    r1cs_tables<Coeff> t{{}, {}, {}, circuit.coeff_mont, circuit.coeff_canon, circuit.coeff_kinds};
    copy(0);
    for (size_t i = 0; i < nchunks; i++) {
        if (i + 1 < nchunks) copy(i + 1);
        const size_t r0 = i * circuit.chunk_rows, rows = std::min(circuit.m - r0, circuit.chunk_rows);
        const csr_chunk& buf = circuit.chunk[i % 2];
        for (int k = 0; k < 3; k++)
            t.row_off[k] = buf.row_off[k], t.cols[k] = buf.cols[k], t.coeff[k] = static_cast<const Coeff*>(buf.coeff[k]);
        CZ_CHECK(cudaStreamWaitEvent(stream, copied[i % 2].e, 0));
        launch_rows(stream, t, z, rows, r0, a, b, c, which);
        CZ_CHECK(cudaEventRecord(consumed[i % 2].e, stream));
    }
}

// Every chunk from the device arrays, one launch a chunk.
template <class Coeff>
void evaluate_resident(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c,
                       matrix_range which) {
    r1cs_tables<Coeff> t{{}, {}, {}, circuit.coeff_mont, circuit.coeff_canon, circuit.coeff_kinds};
    for (size_t i = 0; i < circuit.chunks(); i++) {
        csr_chunk_view v;
        for (int k = 0; k < 3; k++) {
            v = chunk_of(circuit, circuit.mat[k], i);
            t.row_off[k] = v.row_off, t.cols[k] = v.cols, t.coeff[k] = static_cast<const Coeff*>(v.coeff);
        }
        launch_rows(stream, t, z, v.rows, v.r0, a, b, c, which);
    }
}

}  // namespace

csr_chunk_view chunk_of(const cz_circuit& c, const csr_chunked& mat, size_t i) {
    csr_chunk_view v;
    v.r0 = i * c.chunk_rows, v.rows = std::min(c.m - v.r0, c.chunk_rows);
    const uint64_t first = mat.chunk_term0[i];
    v.terms = mat.chunk_term0[i + 1] - first;
    v.row_off = mat.row_off + v.r0 + i;  // chunk i's offsets follow the i chunks before, rows + 1 each
    v.cols = mat.cols + first;
    v.coeff = static_cast<const uint8_t*>(mat.coeff) + first * c.coeff_index_bytes;
    return v;
}

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
    if (evaluated) {
        cudaEventSynchronize(evaluated);  // the last evaluation's copies may still read host_block
        cudaEventDestroy(evaluated);
    }
    for (void* p : owned) device_free(p);
    if (host_block) cudaFreeHost(host_block);
}

std::unique_ptr<cz_circuit> circuit_load(cz_context& ctx, size_t m, size_t num_inputs, size_t num_aux,
                                         const uint64_t* coeffs, size_t n_coeffs, const csr_host mats[3],
                                         const uint8_t* a_aux_density, const uint8_t* b_input_density,
                                         const uint8_t* b_aux_density, bool streamed, size_t chunk_rows) {
    CZ_REQUIRE(m >= 1, "a circuit needs at least one constraint");
    CZ_REQUIRE(chunk_rows >= 1, "a circuit needs chunks of at least one row");
    auto c = std::make_unique<cz_circuit>();
    c->device = ctx.device, c->m = m, c->num_inputs = num_inputs, c->num_aux = num_aux, c->n_coeffs = n_coeffs;
    c->chunk_rows = std::min(chunk_rows, m);
    c->coeff_index_bytes = n_coeffs <= (size_t(1) << 16) ? 2 : 4;
    cudaStream_t s = ctx.stream;
    load_matrices(*c, mats, streamed);
    if (streamed) CZ_CHECK(cudaEventCreateWithFlags(&c->evaluated, cudaEventDisableTiming));
    // The coefficient table, a streamed circuit's two chunk buffers, the kinds and the densities
    // in one device block: a circuit's device bytes are exactly resident_circuit_device_bytes or
    // streamed_circuit_device_bytes (cuzk_plugin/backends/protocol.py).
    fr_t *canon, *mont;
    uint8_t *kinds, *a_aux, *b_input, *b_aux;
    auto layout = [&](carver& k) {
        canon = k.take<fr_t>(n_coeffs), mont = k.take<fr_t>(n_coeffs);
        if (streamed) {  // the uint32 arrays before the uint16 ones: every array stays aligned
            for (csr_chunk& buf : c->chunk)
                for (int i = 0; i < 3; i++)
                    buf.row_off[i] = k.take<uint32_t>(c->chunk_rows + 1), buf.cols[i] = k.take<uint32_t>(c->max_terms[i]);
            for (csr_chunk& buf : c->chunk)
                for (int i = 0; i < 3; i++)
                    buf.coeff[i] = c->coeff_index_bytes == 2 ? static_cast<void*>(k.take<uint16_t>(c->max_terms[i]))
                                                             : static_cast<void*>(k.take<uint32_t>(c->max_terms[i]));
        }
        kinds = k.take<uint8_t>(n_coeffs);
        a_aux = k.take<uint8_t>(num_aux), b_input = k.take<uint8_t>(num_inputs), b_aux = k.take<uint8_t>(num_aux);
    };
    carver size;
    layout(size);
    void* block = nullptr;
    CZ_DEVICE_ALLOC(&block, std::max<size_t>(size.used, 1));
    c->owned.push_back(block);
    c->nbytes += std::max<size_t>(size.used, 1);
    carver at{reinterpret_cast<uintptr_t>(block)};
    layout(at);
    auto upload = [&](void* dst, const void* src, size_t bytes) {
        if (bytes) CZ_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    };
    upload(canon, coeffs, n_coeffs * sizeof(fr_t));
    upload(a_aux, a_aux_density, num_aux);
    upload(b_input, b_input_density, num_inputs);
    upload(b_aux, b_aux_density, num_aux);
    if (n_coeffs) {
        coeff_table_kernel<<<blocks_for(n_coeffs, 128), 128, 0, s>>>(mont, canon, kinds, n_coeffs);
        CZ_CHECK_LAUNCH();
    }
    CZ_CHECK(cudaStreamSynchronize(s));
    c->coeff_canon = canon, c->coeff_mont = mont, c->coeff_kinds = kinds;
    c->a_aux_density = a_aux, c->b_input_density = b_input, c->b_aux_density = b_aux;
    return c;
}

void r1cs_evaluate(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c,
                   size_t n, matrix_range which) {
    CZ_REQUIRE(n >= circuit.m, "R1CS output shorter than the circuit's rows");
    CZ_REQUIRE(which.first >= 0 && which.count >= 1 && which.first + which.count <= 3,
               "an R1CS evaluation covers one to three of A, B and C");
    const size_t m = circuit.m;
    fr_t* outs[3] = {a, b, c};
    for (int k = which.first; k < which.first + which.count; k++) {
        CZ_REQUIRE(outs[k] != nullptr, "an R1CS evaluation's output is missing");
        if (n > m) CZ_CHECK(cudaMemsetAsync(outs[k] + m, 0, (n - m) * sizeof(fr_t), stream));
    }
    const bool narrow = circuit.coeff_index_bytes == 2;
    if (circuit.streamed())
        narrow ? evaluate_streamed<uint16_t>(stream, circuit, z, a, b, c, which)
               : evaluate_streamed<uint32_t>(stream, circuit, z, a, b, c, which);
    else
        narrow ? evaluate_resident<uint16_t>(stream, circuit, z, a, b, c, which)
               : evaluate_resident<uint32_t>(stream, circuit, z, a, b, c, which);
}
