"""tilinglib.grading.source_checks: the grader's static checks on kernel source."""

from tilinglib.grading.source_checks import int_overflow_risks, uninitialized_locals

HEAD = "__global__ void k(int M, int N, int K, const float* A, float* C)\n{\n"


def risks(body, options=None):
    return [(f.line, f.text) for f in int_overflow_risks(HEAD + body + "\n}\n", options)]


def unset(body):
    return [(f.line, f.text) for f in uninitialized_locals(HEAD + body + "\n}\n")]


def test_32_bit_products_in_an_address_are_found_with_their_line():
    assert risks("int row = blockIdx.y;\nC[row * N + 1] = A[row * K];") == [
        (4, "row * K"), (4, "row * N")]


def test_products_reach_an_address_through_variables_and_pointer_arithmetic():
    assert risks("int i = threadIdx.x * K;\nint j = i + 1;\nC[j] = 0.0f;") == [(3, "threadIdx.x * K")]
    assert risks("const float* a = A + blockIdx.y * 16 * K;\nC[0] = a[0];") == [
        (3, "(blockIdx.y * 16) * K")]
    assert risks("const float* a = A;\na += M * K;\nC[0] = a[0];") == [(4, "M * K")]


def test_64_bit_constant_and_launch_bounded_products_are_fine():
    assert risks("int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
                 "C[(size_t)r * N + 3 * 4] = A[(long long)r * K];") == []
    assert risks("size_t r = blockIdx.y;\nC[r * N] = A[r * K];") == []
    assert risks("C[blockIdx.x * TILE] = 0.0f;", options=["-DTILE=16"]) == []


def test_products_that_never_reach_an_address_are_ignored():
    assert risks("int x = M * N;\nfloat s = x * 2.0f;\nC[0] = s;") == []


def test_a_local_read_before_it_is_set():
    assert unset("float sum;\nsum += A[0];\nC[0] = sum;") == [(4, "sum")]
    assert unset("float sum;\nsum = sum + 1.0f;") == [(4, "sum")]


def test_locals_set_before_use_arrays_and_shared_are_fine():
    assert unset("float sum;\nsum = 0.0f;\nsum += A[0];\nC[0] = sum;") == []
    assert unset("float v[4];\nv[0] = 1.0f;\nC[0] = v[0];") == []
    assert unset("__shared__ float t[16];\nt[threadIdx.x] = 1.0f;\nC[0] = t[0];") == []


DEVICE = "__device__ int at(int r, int w, int c)\n{\n    return r * w + c;\n}\n"


def test_a_product_in_a_device_function_whose_result_is_an_index_is_found():
    src = DEVICE + HEAD + "C[at(blockIdx.y, N, threadIdx.x)] = A[0];\n}\n"
    assert [(f.line, f.text) for f in int_overflow_risks(src)] == [(3, "r * w (in at())")]
    # ... and through a local variable, and a helper that calls the helper.
    src = (DEVICE + "__device__ int at2(int r, int w) { return at(r, w, 1); }\n" + HEAD
           + "int i = at2(blockIdx.y, K);\nC[i] = 0.0f;\n}\n")
    assert [(f.line, f.text) for f in int_overflow_risks(src)] == [(3, "r * w (in at())")]


def test_a_product_indexing_a_pointer_inside_a_device_function_is_found():
    src = ("__device__ float get(const float* p, int r, int w) { return p[r * w]; }\n"
           + HEAD + "C[0] = get(A, blockIdx.y, K);\n}\n")
    assert [(f.line, f.text) for f in int_overflow_risks(src)] == [(1, "r * w (in get())")]


def test_a_device_function_with_64_bit_or_unused_products_is_fine():
    src = ("__device__ size_t at(size_t r, int w, int c) { return r * w + c; }\n"
           "__device__ int area(int a, int b) { return a * b; }\n"
           + HEAD + "float s = area(M, N) * 1.0f;\nC[at(blockIdx.y, N, 0)] = s + A[0];\n}\n")
    assert int_overflow_risks(src) == []


def test_a_64_bit_product_cast_back_to_32_bits_is_found():
    assert risks("int r = blockIdx.y;\nC[(int)((size_t)r * N) + 1] = A[0];") == [
        (4, "(int) (((size_t) r) * N): a 64-bit product cast back to 32 bits")]
    assert risks("int r = blockIdx.y;\nint off = (size_t)r * N;\nC[off] = A[0];") == [
        (4, "off = ((size_t) r) * N: a 64-bit product stored in a 32-bit int")]
    # Through a 64-bit variable, the cast still truncates; kept in 64 bits, it is fine.
    assert risks("int r = blockIdx.y;\nsize_t off = (size_t)r * N;\nC[off] = A[(int)off];") == [
        (5, "(int) off: a 64-bit product cast back to 32 bits")]
    assert risks("int r = blockIdx.y;\nsize_t off = (size_t)r * N;\n"
                 "C[off + (int)threadIdx.x] = A[(int)(size_t)r];") == []


def test_cxx_integer_constants_are_constants_like_a_define():
    for head in ("constexpr int T = 16;\n", "static const int T = 16;\n", "enum { T = 16 };\n",
                 "enum Sizes { S = 8, T = S * 2 };\n"):
        src = (head + HEAD + "int row = blockIdx.y * T + threadIdx.y;\n"
               "C[(size_t)row * N] = A[0];\n}\n")
        assert int_overflow_risks(src) == [], head
    # a local constexpr too; a const initialised from a parameter is no constant
    assert risks("constexpr int L = 4;\nconst int Q = K;\nC[blockIdx.x * L] = A[blockIdx.x * Q];") \
        == [(5, "blockIdx.x * Q")]


def test_every_cast_form_makes_a_64_bit_product():
    for cast in ("static_cast<size_t>(r)", "size_t(r)", "std::size_t(r)", "(long long)r",
                 "static_cast<int64_t>(r)", "(unsigned long)r", "long(r)"):
        assert risks(f"int r = blockIdx.y;\nC[{cast} * N] = A[0];") == [], cast
    assert risks("int r = blockIdx.y;\nC[size_t{0} + r * N] = A[0];") == [(4, "r * N")]


METHODS = ("struct View {\n    const float* p;\n    int ld;\n"
           "    __device__ float at(int r, int c) const { return p[r * ld + c]; }\n"
           "    __device__ const float* row(int r) const { return p + (size_t)r * ld; }\n};\n")


def test_a_product_inside_a_struct_method_is_found():
    src = METHODS + HEAD + "View v{A, K};\nC[0] = v.at(blockIdx.y, 1) + v.row(blockIdx.y)[0];\n}\n"
    assert [(f.line, f.text) for f in int_overflow_risks(src)] == [(4, "r * ld (in View::at())")]
    src = METHODS + HEAD + "View v{A, K};\nC[0] = v.p[blockIdx.y * v.ld];\n}\n"
    assert [(f.line, f.text) for f in int_overflow_risks(src)] == [(10, "blockIdx.y * v.ld")]
