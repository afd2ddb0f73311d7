// difftest case: runtime: TypeError: ufunc 'bitwise_or' not supported for the input types, and the inputs could not be safely coerced to any suppo
// class: implicit conversion (arguments of built-ins: the overload clang chose)
// outs: int int int float float double
// threads: 1
// inputs: {"i8": [-39, -27, 2, 127, 76, 100], "u8": [36, 127, 131, 127, 63, 3], "i16": [21170, -35, 31, -6, -1393, -27], "u16": [256, 1, 11832, 43, 28, 23], "i32": [-129, -2065456274, 3, -390071877, 648807543, 31], "u32": [1909019374, 4210763392, 2214153004, 46, 3850612228, 0], "i64": [-27, 2073519945729160708, -7308986916615535318, 8839615102247576215, -7476744463305165899, 16], "u64": [4585302990846133324, 3458826021831706727, 2, 719161832034912678, 32, 16], "f32": [9.99994610111476e-41, 0.0010000000474974513, 4.438589096069336, 1.25, 4.823642479192478e-31, -1.3537947063796793e-18], "f64": [255.0, -2147483648.0, -8.247837201730517, 1.212959144246623e+256, -29.071668060054133, 115.45697469862868]}
// test 0 (shrunk)
__device__ void t0(const int tid, const signed char* __restrict__ in_i8, const unsigned char* __restrict__ in_u8, const short* __restrict__ in_i16, const unsigned short* __restrict__ in_u16, const int* __restrict__ in_i32, const unsigned int* __restrict__ in_u32, const long long* __restrict__ in_i64, const unsigned long long* __restrict__ in_u64, const float* __restrict__ in_f32, const double* __restrict__ in_f64, unsigned long long* __restrict__ out) {
  unsigned short a7 = in_u16[tid * 6 + 4];
  float v12 = a7;
  unsigned short v13 = v12;
  short int v14 = (v13 | llabs(8.0258355e+14f));
  float a4 = in_f32[tid * 6 + 0];
  float a6 = in_f32[tid * 6 + 3];
  out[0] = v14;
  out[1] = (umax(a6, a4) & 7);
  out[2] = umin(a6, 5.5f) % 3;
  out[3] = __float_as_uint(sqrt(a4) * 3.0f + 1e-8f);
  out[4] = __float_as_uint(fabs(a6) * 0.1f);
  out[5] = __double_as_longlong(sqrt(2.0) * 1.0);
}
