// difftest case: mismatch
// class: ternary (conversion to the common type)
// outs: int int
// threads: 1
// inputs: {"i8": [0, 106, 2, 1, 8, -116], "u8": [20, 42, 128, 18, 13, 35], "i16": [40, 16714, 0, 2, -19875, -24043], "u16": [128, 13128, 47471, 50893, 31, 9417], "i32": [954063047, 119418171, -1804172927, 256, 127, 483300494], "u32": [2822005532, 3, 23, 0, 32, 255], "i64": [32, 6, 3, 10, 9, 75033314599549684], "u64": [15628776900803294410, 4997698298898279100, 0, 10094244689830426997, 6105129877913695641, 418410731878016267], "f32": [2.0, -109.44114685058594, -51.96596908569336, 36.701786041259766, 4294967296.0, -1428559.375], "f64": [1.8735143743244157e-140, 8.800975240465115e+296, 30.62577115070167, -1.0482173731807532e-195, -3.1391000445967475e+162, -71.328456184572]}
// test 0 (shrunk)
__device__ void t0(const int tid, const signed char* __restrict__ in_i8, const unsigned char* __restrict__ in_u8, const short* __restrict__ in_i16, const unsigned short* __restrict__ in_u16, const int* __restrict__ in_i32, const unsigned int* __restrict__ in_u32, const long long* __restrict__ in_i64, const unsigned long long* __restrict__ in_u64, const float* __restrict__ in_f32, const double* __restrict__ in_f64, unsigned long long* __restrict__ out) {
  float a1 = (0x1.259d420000000p+5f);
  int a2 = in_i32[tid * 6 + 1];
  (a2 += (0x64U ? a2 : a1));
  out[0] = a2;
  out[1] = sizeof(0x64U ? a2 : a1);
}
