// difftest case: compile: CompileError: kernel.cu: 'f#_#<#>' is not a function the kernel can call (not declared, and not a CUDA built-in the emul
// class: sizeof (the type of an unevaluated operand)
// outs: int int int
// threads: 1
// inputs: {"i8": [-39, -27, 2, 127, 76, 100], "u8": [36, 127, 131, 127, 63, 3], "i16": [21170, -35, 31, -6, -1393, -27], "u16": [256, 1, 11832, 43, 28, 23], "i32": [-129, -2065456274, 3, -390071877, 648807543, 31], "u32": [1909019374, 4210763392, 2214153004, 46, 3850612228, 0], "i64": [-27, 2073519945729160708, -7308986916615535318, 8839615102247576215, -7476744463305165899, 16], "u64": [4585302990846133324, 3458826021831706727, 2, 719161832034912678, 32, 16], "f32": [9.99994610111476e-41, 0.0010000000474974513, 4.438589096069336, 1.25, 4.823642479192478e-31, -1.3537947063796793e-18], "f64": [255.0, -2147483648.0, -8.247837201730517, 1.212959144246623e+256, -29.071668060054133, 115.45697469862868]}
// test 0 (shrunk)
template <uint32_t N> __device__ unsigned int f38_0(uint32_t x7) {
  return x7 * N;
}
__device__ void t0(const int tid, const signed char* __restrict__ in_i8, const unsigned char* __restrict__ in_u8, const short* __restrict__ in_i16, const unsigned short* __restrict__ in_u16, const int* __restrict__ in_i32, const unsigned int* __restrict__ in_u32, const long long* __restrict__ in_i64, const unsigned long long* __restrict__ in_u64, const float* __restrict__ in_f32, const double* __restrict__ in_f64, unsigned long long* __restrict__ out) {
  signed char a2 = in_i8[tid * 6 + 2];
  out[0] = sizeof(f38_0<351ll>(a2));
  out[1] = sizeof('a') + 10 * sizeof(a2 ? 'a' : 'b');
  char c1 = a2, c2 = 2;
  out[2] = sizeof(a2 ? c1 : c2);
}
