// A pre-compiled circuit (cuzk_plugin/formats/pce.py) on the device, and the R1CS evaluation
// a = A z, b = B z, c = C z over its rows, which feeds H without leaving the device. Its
// matrices, in a compact form (csr_chunked), are resident in device memory, or (streamed) kept
// in page-locked host memory and copied through the device a chunk of rows at a time at each
// evaluation, for a device too small to hold them beside the proving key.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "context.cuh"

// What a coefficient is, so the row loop can skip the product where it need not multiply.
enum coeff_kind : uint8_t { COEFF_OTHER = 0, COEFF_ONE = 1, COEFF_MINUS_ONE = 2 };

// One matrix as the C ABI takes it: compressed sparse rows, row j's terms row_ptr[j] ..
// row_ptr[j + 1], each a column of z and an index into the coefficient table.
struct csr_host {
    const uint64_t* row_ptr;
    const uint32_t* cols;
    const uint32_t* coeff;
    size_t nnz;
};

// The form the library holds a matrix in, resident or streamed alike: its rows in chunks of
// cz_circuit::chunk_rows, chunk i's rows + 1 offsets from its first term (uint32) at
// row_off[r0 + i ..], then every term's column (uint32) and coefficient index
// (cz_circuit::coeff_index_bytes each: uint16 where the table has at most 2^16 entries). A row
// pointer of 8 bytes and an index of 4 carry nothing more, and a streamed circuit copies these
// bytes at every evaluation.
struct csr_chunked {
    const uint32_t* row_off = nullptr;  // m + chunks
    const uint32_t* cols = nullptr;     // nnz
    const void* coeff = nullptr;        // nnz, coeff_index_bytes each
    std::vector<uint64_t> chunk_term0;  // chunks + 1: each chunk's first term, nnz last
};

// One of a streamed circuit's two device chunk buffers: a chunk's arrays of each matrix.
struct csr_chunk {
    uint32_t* row_off[3] = {};
    uint32_t* cols[3] = {};
    void* coeff[3] = {};
};

// The circuit on the device until cz_circuit_free: coefficient table, densities, and its
// matrices (csr_chunked) either in device memory (resident) or in page-locked host memory with
// two device chunk buffers they are copied through (streamed: chunk i + 1 copied while chunk i
// is evaluated).
struct cz_circuit {
    int device = 0;
    size_t m = 0, num_inputs = 0, num_aux = 0, n_coeffs = 0;
    csr_chunked mat[3];                  // A, B, C: on the device, or (streamed) in host_block
    int coeff_index_bytes = 4;
    size_t chunk_rows = 0;
    size_t max_terms[3] = {};            // the most terms a chunk has, per matrix
    const fr_t* coeff_mont = nullptr;    // the table in Montgomery form: M(c R, z) = c z
    const fr_t* coeff_canon = nullptr;   // canonical: the term when z = 1
    const uint8_t* coeff_kinds = nullptr;
    const uint8_t *a_aux_density = nullptr, *b_input_density = nullptr, *b_aux_density = nullptr;
    size_t nbytes = 0;  // device bytes
    std::vector<void*> owned;
    // Streamed: the matrices in one page-locked host block (cudaHostAllocPortable) of host_bytes.
    void* host_block = nullptr;
    size_t host_bytes = 0;
    csr_chunk chunk[2];
    // Recorded after each evaluation's work: the next one's copies into the chunk buffers wait
    // for it, and the circuit is not freed under copies still reading the host block.
    cudaEvent_t evaluated = nullptr;
    // Enqueues one evaluation at a time on the chunk buffers (api.cu's evaluations of one
    // circuit through two contexts hold no common lock).
    mutable std::mutex evaluating;

    bool streamed() const { return host_block != nullptr; }
    size_t chunks() const { return (m + chunk_rows - 1) / chunk_rows; }
    ~cz_circuit();
};

// Chunk i of one of a circuit's matrices (csr_chunked), where the matrix lives (the device, or
// a streamed circuit's host block): rows r0 .. r0 + rows, their rows + 1 offsets from the
// chunk's first term, and its `terms` columns and coefficient indices.
struct csr_chunk_view {
    size_t r0 = 0, rows = 0;
    uint64_t terms = 0;
    const uint32_t* row_off = nullptr;
    const uint32_t* cols = nullptr;
    const void* coeff = nullptr;  // cz_circuit::coeff_index_bytes each
};
csr_chunk_view chunk_of(const cz_circuit& c, const csr_chunked& mat, size_t i);

// Loads a circuit on ctx's device (coeffs: n_coeffs canonical Fr, 4 uint64 each; the caller
// has checked the CSR arrays: row_ptr non-decreasing from 0 to nnz, cols < num_inputs +
// num_aux, coefficient indices < n_coeffs) in the compact form of chunk_rows (>= 1) rows a
// chunk: every array resident, or when `streamed` the matrices in page-locked host memory and
// two chunk buffers allocated on the device, so that an evaluation needs no more.
std::unique_ptr<cz_circuit> circuit_load(cz_context& ctx, size_t m, size_t num_inputs, size_t num_aux,
                                         const uint64_t* coeffs, size_t n_coeffs, const csr_host mats[3],
                                         const uint8_t* a_aux_density, const uint8_t* b_input_density,
                                         const uint8_t* b_aux_density, bool streamed, size_t chunk_rows);

// Which of A, B and C (0, 1, 2) an evaluation fills: `count` of them from `first`.
struct matrix_range {
    int first = 0, count = 3;
};

// a, b, c (canonical, circuit.m rows each, rows m .. n - 1 set to zero) from z (canonical,
// inputs then aux) on `stream`; a streamed circuit's chunks are copied on a stream of their own.
// Only the matrices of `which` are evaluated (and, streamed, copied): the others' outputs may
// be null. A device short of memory evaluates C after A B has been formed, in A's or B's room.
void r1cs_evaluate(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c, size_t n,
                   matrix_range which = {});

// Rows j < m with a_j * b_j != c_j (canonical a, b, c on the device): how many, and the first
// (UINT64_MAX when every row holds). Blocks until the count is on the host.
struct r1cs_violations {
    uint64_t count = 0;
    uint64_t first = UINT64_MAX;
};
r1cs_violations r1cs_check(cudaStream_t stream, const fr_t* a, const fr_t* b, const fr_t* c, size_t m);
