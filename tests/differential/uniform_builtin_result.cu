// difftest case: runtime: IndexError: too many indices for array: array is #-dimensional, but # were indexed
// class: built-ins (a result uniform over the threads)
// outs: float int
// threads: 2
// inputs: {"i8": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "u8": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "i16": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "u16": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "i32": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "u32": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "i64": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "u64": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "f32": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "f64": [0.0, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0, -2.5, 0.0, 0.0]}
// test 0 (shrunk)
__device__ void t0(const int tid, const signed char* __restrict__ in_i8, const unsigned char* __restrict__ in_u8, const short* __restrict__ in_i16, const unsigned short* __restrict__ in_u16, const int* __restrict__ in_i32, const unsigned int* __restrict__ in_u32, const long long* __restrict__ in_i64, const unsigned long long* __restrict__ in_u64, const float* __restrict__ in_f32, const double* __restrict__ in_f64, unsigned long long* __restrict__ out) {
  double a5 = in_f64[tid * 6 + 3];
  const ushort v17 = __popc(0x43f4f5fe28c8ba79LL);
  float r26[4] = {0, 1, 2, 3};
  if (a5 > 0) {
    float r27[4] = {0, float(v17)};
    r26[0] = r27[1];
  }
  out[0] = __float_as_uint(r26[0]);
  out[1] = v17;
}
