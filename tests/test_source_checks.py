"""tilinglib._source_checks: the grader's static checks on kernel source."""

from tilinglib._source_checks import int_overflow_risks, uninitialized_locals

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
