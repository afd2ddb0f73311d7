"""The host side of the differential test: a batch compiled as C++ by ``zig c++`` (clang,
from the same `ziglang` wheel the emulator's front end runs) and run on this CPU.

The program is freestanding (``-nostdlib``: no libc is built or linked, so a cold zig cache
costs nothing): `PRELUDE` defines the CUDA words away and gives the vector types, the bit
casts and the math functions the generator uses, each as C++ or a clang builtin that x86-64
computes exactly (``sqrtss``, ``roundss``, ``vfmadd``); the driver reads the inputs from
stdin, runs every test for every thread in turn, and writes the output words and one flag
byte per (test, thread) to stdout.

Undefined behaviour is caught, never compared: the compile instruments signed overflow,
shifts, integer division, float-to-integer conversion and array bounds
(``-fsanitize=...``) and `PRELUDE` defines the sanitizer's handlers itself, which set the
flag. Signed overflow wraps (``-fwrapv``: the emulator's documented rule, and the
hardware's) and is only marked (`OVERFLOW`); the rest marks the instance undefined
(`UNDEFINED`) and it is left out. A hardware trap (``INT_MIN / -1``, a divide by zero that
the shrinker exposed) is caught by a signal handler that jumps back to the driver.

Float arithmetic is IEEE single and double on SSE (x86-64 has no excess precision), with
``-ffp-contract=off``: nothing is fused, so the emulator runs with ``-fmad=false``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np

from . import program as P

OVERFLOW = 1        # a signed operation overflowed (wrapped, still compared)
UNDEFINED = 2       # undefined behaviour: the instance is not compared
TRAPPED = 4         # a hardware trap or a fault in the host run (also not compared)

FLAGS = ["-target", "x86_64-linux-none", "-nostdlib", "-ffreestanding", "-static",
         "-std=c++20", "-O0", "-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off",
         "-fno-math-errno", "-fno-exceptions", "-fno-rtti", "-fno-stack-protector",
         "-fno-sanitize=all",
         "-fsanitize=signed-integer-overflow,shift,integer-divide-by-zero,"
         "float-cast-overflow,bounds,bool,vla-bound,return",
         "-fno-sanitize-link-runtime", "-msse4.1", "-fno-color-diagnostics",
         # no warnings, but a variable read in its own initialiser is a generator bug
         "-Wno-everything", "-Werror=uninitialized"]


def has_fma() -> bool:
    """Whether this CPU has FMA instructions (``fmaf`` is then one ``vfmadd``)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " fma " in line + " " for line in f)
    except OSError:
        return False


def zig_command() -> list[str]:
    """``[zig, 'c++']``: the zig binary ``TILINGLIB_ZIG`` names (with its ``lib/`` folder
    beside it, as zig needs), else the ziglang wheel's (the binary the front end runs)."""
    zig = os.environ.get("TILINGLIB_ZIG")
    if not zig:
        import ziglang
        zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    return [zig, "c++"]


_VECTORS = {"char": "signed char", "uchar": "unsigned char", "short": "short",
            "ushort": "unsigned short", "int": "int", "uint": "unsigned int",
            "long": "long", "ulong": "unsigned long", "longlong": "long long",
            "ulonglong": "unsigned long long", "float": "float", "double": "double"}


def _vector_types() -> str:
    out = []
    for base, c in _VECTORS.items():
        size = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
                "float": 4}.get(base, 8)
        for n in (1, 2, 3, 4):
            name = f"{base}{n}"
            align = size * n if n in (2, 4) else size
            align = min(align, 16)                  # CUDA's 4-component 64-bit types
            fields = " ".join(f"{c} {f};" for f in "xyzw"[:n])
            params = ", ".join(f"{c} {f}" for f in "xyzw"[:n])
            sets = " ".join(f"r.{f} = {f};" for f in "xyzw"[:n])
            out.append(f"struct alignas({align}) {name} {{ {fields} }};\n"
                       f"static inline {name} make_{name}({params}) {{ {name} r; {sets} "
                       f"return r; }}")
    return "\n".join(out)


PRELUDE = r"""// host prelude: CUDA C++ as host C++ (tools/difftest/host.py)
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
extern "C" void *memcpy(void *d, const void *s, size_t n) {
  unsigned char *a = (unsigned char *)d; const unsigned char *b = (const unsigned char *)s;
  for (size_t i = 0; i < n; i++) a[i] = b[i];
  return d;
}
extern "C" void *memmove(void *d, const void *s, size_t n) {
  unsigned char *a = (unsigned char *)d; const unsigned char *b = (const unsigned char *)s;
  if (a < b) { for (size_t i = 0; i < n; i++) a[i] = b[i]; }
  else { for (size_t i = n; i-- > 0;) a[i] = b[i]; }
  return d;
}
extern "C" void *memset(void *d, int v, size_t n) {
  unsigned char *a = (unsigned char *)d;
  for (size_t i = 0; i < n; i++) a[i] = (unsigned char)v;
  return d;
}
""" + _vector_types() + r"""
typedef uint3 dim3;
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static const int warpSize = 32;
static inline unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
static inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
static inline float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
static inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
static inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
static inline float sqrtf(float x) { return __builtin_sqrtf(x); }
static inline double sqrt(double x) { return __builtin_sqrt(x); }
static inline float fabsf(float x) { return __builtin_fabsf(x); }
static inline double fabs(double x) { return __builtin_fabs(x); }
static inline float floorf(float x) { return __builtin_floorf(x); }
static inline double floor(double x) { return __builtin_floor(x); }
static inline float ceilf(float x) { return __builtin_ceilf(x); }
static inline double ceil(double x) { return __builtin_ceil(x); }
static inline float truncf(float x) { return __builtin_truncf(x); }
static inline double trunc(double x) { return __builtin_trunc(x); }
static inline float rintf(float x) { return __builtin_rintf(x); }
static inline double rint(double x) { return __builtin_rint(x); }
static inline float roundf(float x) { return __builtin_roundf(x); }
static inline double round(double x) { return __builtin_round(x); }
// fmin/fmax as IEEE 754-2019 minimumNumber/maximumNumber: a NaN gives the other operand,
// and -0 is below +0 (C leaves the sign of fminf(0, -0) open; the H200 gives -0, as the
// emulator does: docs/emulator.md, "Arithmetic")
#define FMINMAX(T, MIN, MAX) \
  static inline T MIN(T x, T y) { if (x != x) return y; if (y != y) return x; \
    if (x == y) return __builtin_signbit(x) ? x : y; return x < y ? x : y; } \
  static inline T MAX(T x, T y) { if (x != x) return y; if (y != y) return x; \
    if (x == y) return __builtin_signbit(x) ? y : x; return x > y ? x : y; }
FMINMAX(float, fminf, fmaxf) FMINMAX(double, fmin, fmax)
static inline float copysignf(float x, float y) { return __builtin_copysignf(x, y); }
static inline double copysign(double x, double y) { return __builtin_copysign(x, y); }
static inline float fmaf(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
static inline double fma(double x, double y, double z) { return __builtin_fma(x, y, z); }
static inline float __fadd_rn(float x, float y) { return x + y; }
static inline float __fsub_rn(float x, float y) { return x - y; }
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline float __fdiv_rn(float x, float y) { return x / y; }
static inline double __dadd_rn(double x, double y) { return x + y; }
static inline double __dmul_rn(double x, double y) { return x * y; }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
static inline unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
static inline int __mul24(int x, int y) {
  return (int)((unsigned)((x << 8) >> 8) * (unsigned)((y << 8) >> 8)); }
static inline unsigned int __umul24(unsigned int x, unsigned int y) {
  return (x & 0xFFFFFFu) * (y & 0xFFFFFFu); }
// CUDA's min and max (CUDA Math API, "Integer Mathematical Functions" and the float ones):
// these signatures, the mixed ones comparing in the unsigned type
#define MINMAX(R, A, B) \
  static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
  static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
MINMAX(int, int, int) MINMAX(unsigned int, unsigned int, unsigned int)
MINMAX(unsigned int, int, unsigned int) MINMAX(unsigned int, unsigned int, int)
MINMAX(long, long, long) MINMAX(unsigned long, unsigned long, unsigned long)
MINMAX(unsigned long, long, unsigned long) MINMAX(unsigned long, unsigned long, long)
MINMAX(long long, long long, long long)
MINMAX(unsigned long long, unsigned long long, unsigned long long)
MINMAX(unsigned long long, long long, unsigned long long)
MINMAX(unsigned long long, unsigned long long, long long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin(a, b); }
static inline double max(float a, double b) { return fmax(a, b); }
static inline double min(double a, float b) { return fmin(a, b); }
static inline double max(double a, float b) { return fmax(a, b); }
static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
// the float overloads of <cmath>'s names, which CUDA declares for device code
// (math_functions.hpp): sqrt(float) is a float
static inline float sqrt(float x) { return __builtin_sqrtf(x); }
static inline float fabs(float x) { return __builtin_fabsf(x); }
static inline float floor(float x) { return __builtin_floorf(x); }
static inline float ceil(float x) { return __builtin_ceilf(x); }
static inline float trunc(float x) { return __builtin_truncf(x); }
static inline float round(float x) { return __builtin_roundf(x); }
static inline float rint(float x) { return __builtin_rintf(x); }
static inline float fmin(float x, float y) { return fminf(x, y); }
static inline float fmax(float x, float y) { return fmaxf(x, y); }
static inline float copysign(float x, float y) { return __builtin_copysignf(x, y); }
static inline float fma(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
// an integer argument takes the double function on the host, as libstdc++'s templates for
// integral types give (sqrt(2) is a double); nvcc and the emulator refuse it in device code,
// so the generated tests never call these
template <class T> static inline double sqrt(T x) { return __builtin_sqrt((double)x); }
template <class T> static inline double fabs(T x) { return __builtin_fabs((double)x); }
template <class T> static inline double floor(T x) { return __builtin_floor((double)x); }
template <class T> static inline double ceil(T x) { return __builtin_ceil((double)x); }
template <class T> static inline double trunc(T x) { return __builtin_trunc((double)x); }
template <class T> static inline double round(T x) { return __builtin_round((double)x); }
template <class T> static inline double rint(T x) { return __builtin_rint((double)x); }
static inline float abs(float x) { return __builtin_fabsf(x); }
static inline double abs(double x) { return __builtin_fabs(x); }
static inline long abs(long a) { return a < 0 ? -a : a; }
static inline long long abs(long long a) { return a < 0 ? -a : a; }
static inline int abs(int a) { return a < 0 ? -a : a; }
static inline long long llabs(long long a) { return a < 0 ? -a : a; }
static void __syncthreads() {}
// a kernel's device text is compiled here too, never run: its host version exchanges the
// values itself (kernels.py)
template <class T> static T __ldg(const T *p) { return *p; }
template <class T> static T __shfl_sync(unsigned, T v, int, int = 32) { return v; }
template <class T> static T __shfl_xor_sync(unsigned, T v, int, int = 32) { return v; }
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned, int = 32) { return v; }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned, int = 32) { return v; }
// the atomics, on the host's one thread (a phase uses only updates that commute)
#define ATOMIC(T, name, expr) static inline T name(T *p, T v) { T o = *p; *p = (expr); return o; }
#define ATOMICS(T) ATOMIC(T, atomicAdd, o + v) ATOMIC(T, atomicSub, o - v) \
  ATOMIC(T, atomicMax, o > v ? o : v) ATOMIC(T, atomicMin, o < v ? o : v) \
  ATOMIC(T, atomicOr, o | v) ATOMIC(T, atomicAnd, o & v) ATOMIC(T, atomicXor, o ^ v)
ATOMICS(int) ATOMICS(unsigned int) ATOMICS(unsigned long long) ATOMICS(long long)
ATOMIC(unsigned int, atomicInc, o >= v ? 0 : o + 1)
ATOMIC(unsigned int, atomicDec, (o == 0 || o > v) ? v : o - 1)

// what the sanitizer reports sets a flag (its runtime is not linked: these are it)
static unsigned char g_flag;
struct SourceLocation { const char *file; unsigned int line, column; };
#define OVERFLOWS(name) extern "C" void __ubsan_handle_##name(void *, void *, void *) { g_flag |= 1; }
#define UNDEFINED(name) extern "C" void __ubsan_handle_##name(void *, void *, void *) { g_flag |= 2; }
OVERFLOWS(add_overflow) OVERFLOWS(sub_overflow) OVERFLOWS(mul_overflow)
OVERFLOWS(negate_overflow)
UNDEFINED(divrem_overflow) UNDEFINED(shift_out_of_bounds) UNDEFINED(float_cast_overflow)
UNDEFINED(out_of_bounds) UNDEFINED(load_invalid_value) UNDEFINED(vla_bound_not_positive)
UNDEFINED(implicit_conversion) UNDEFINED(invalid_builtin)

static long sys3(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
static long sys4(long n, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
static void read_all(void *p, unsigned long n) {
  char *c = (char *)p;
  while (n) { long k = sys3(0, 0, (long)c, (long)n); if (k <= 0) sys3(60, 3, 0, 0); c += k; n -= k; }
}
static void write_all(const void *p, unsigned long n) {
  const char *c = (const char *)p;
  while (n) { long k = sys3(1, 1, (long)c, (long)n); if (k <= 0) sys3(60, 4, 0, 0); c += k; n -= k; }
}
static void *g_jump[5];
struct KernelSigaction { void (*handler)(int); unsigned long flags; void (*restorer)(); unsigned long mask; };
extern "C" void restore_rt();
__asm__(".text\n restore_rt:\n mov $15, %rax\n syscall\n");
static void on_trap(int) { __builtin_longjmp(g_jump, 1); }
// a function that ends without its return statement (a shrink step deleted it)
extern "C" void __ubsan_handle_missing_return(void *) { g_flag |= 2; __builtin_longjmp(g_jump, 1); }
static void catch_traps() {
  KernelSigaction sa = {on_trap, 0x04000000ul | 0x40000000ul, restore_rt, 0};
  sys4(13, 8, (long)&sa, 0, 8);       // SIGFPE
  sys4(13, 11, (long)&sa, 0, 8);      // SIGSEGV
  sys4(13, 4, (long)&sa, 0, 8);       // SIGILL
  sys4(13, 7, (long)&sa, 0, 8);       // SIGBUS
}
"""


def driver(tests, threads: int) -> str:
    """The host's ``_start``: inputs from stdin, each test for each thread (flags set by
    the sanitizer's handlers and the trap handler), then outputs and flags to stdout."""
    n_in = threads * P.NIN
    lines = []
    for code, t in P.INPUTS.items():
        lines.append(f"static {t.name} g_in_{code}[{n_in}];")
    lay = P.layout(tests, threads)
    total = sum(n * threads for _, n in lay) or 1
    lines.append(f"static unsigned long long g_out[{total}];")
    lines.append(f"static unsigned char g_flags[{len(tests) * threads or 1}];")
    lines.append("static void run_one(int test, int tid) {")
    lines.append("  switch (test) {")
    args = ", ".join(f"g_in_{code}" for code in P.INPUTS)
    kernels = []
    for i, (t, (offset, n)) in enumerate(zip(tests, lay)):
        if getattr(t, "kind", "") == "kernel":
            # a kernel runs all its threads in one call (kernels.py), at thread 0
            kernels.append(i)
            lines.append(f"  case {i}: kernel_host_{t.index}({args}, g_out + {offset}ull); "
                         f"break;")
            continue
        lines.append(f"  case {i}: {t.name}(tid, {args}, g_out + {offset}ull + "
                     f"(unsigned long long)tid * {n}); break;")
    lines.append("  }\n}")
    is_kernel = ", ".join("1" if i in kernels else "0" for i in range(len(tests))) or "0"
    lines.append(f"static const unsigned char g_is_kernel[] = {{{is_kernel}}};")
    lines.append('extern "C" __attribute__((force_align_arg_pointer, noreturn)) void _start() {')
    for code in P.INPUTS:
        lines.append(f"  read_all(g_in_{code}, sizeof g_in_{code});")
    lines.append("  catch_traps();")
    lines.append(f"  for (int test = 0; test < {len(tests)}; ++test)")
    lines.append(f"    for (int tid = 0; tid < {threads}; ++tid) {{")
    lines.append("      threadIdx.x = tid; threadIdx.y = 0; threadIdx.z = 0;")
    lines.append("      if (g_is_kernel[test] && tid > 0) {")
    lines.append(f"        g_flags[test * {threads} + tid] = g_flags[test * {threads}];")
    lines.append("        continue;")
    lines.append("      }")
    lines.append("      g_flag = 0;")
    lines.append("      if (__builtin_setjmp(g_jump) == 0) run_one(test, tid);")
    lines.append("      else g_flag |= 4;")
    lines.append(f"      g_flags[test * {threads} + tid] = g_flag;")
    lines.append("    }")
    lines.append("  write_all(g_out, sizeof g_out);")
    lines.append("  write_all(g_flags, sizeof g_flags);")
    lines.append("  sys3(60, 0, 0, 0);")
    lines.append("  __builtin_unreachable();")
    lines.append("}")
    return "\n".join(lines) + "\n"


def host_source(tests, threads: int) -> str:
    kernels = "".join(t.host_function() for t in tests if getattr(t, "kind", "") == "kernel")
    return (PRELUDE + "\n" + P.device_source(tests, threads) + "\n" + kernels + "\n"
            + driver(tests, threads))


class HostCompileError(Exception):
    """The host compiler refused a batch (the generator's fault, or a shrink step's)."""


def compile_and_run(tests, inputs: dict, threads: int, workdir: str | None = None,
                    fma: bool = True):
    """Compile `tests` for the host and run them on `inputs` ({code: array of threads*NIN
    values}). Returns (outputs, flags): outputs a uint64 array laid out as
    `program.layout`, flags a uint8 array [test, thread]. Raises `HostCompileError` with
    clang's messages when the batch does not compile."""
    src = host_source(tests, threads)
    tmp = workdir or tempfile.mkdtemp(prefix="difftest-")
    path = os.path.join(tmp, "batch.cpp")
    exe = os.path.join(tmp, "batch")
    with open(path, "w") as f:
        f.write(src)
    flags = FLAGS + (["-mfma"] if fma else [])
    r = subprocess.run(zig_command() + flags + [path, "-o", exe], capture_output=True,
                       text=True, cwd=tmp)
    if r.returncode != 0:
        raise HostCompileError(r.stderr[-4000:])
    data = b"".join(np.ascontiguousarray(inputs[code], dtype=t.name and _dtype(t)).tobytes()
                    for code, t in P.INPUTS.items())
    run = subprocess.run([exe], input=data, capture_output=True, timeout=60)
    lay = P.layout(tests, threads)
    total = sum(n * threads for _, n in lay) or 1
    want = total * 8 + (len(tests) * threads or 1)
    if run.returncode != 0 or len(run.stdout) != want:
        raise RuntimeError(f"host run failed (exit {run.returncode}, {len(run.stdout)} of "
                           f"{want} bytes)")
    out = np.frombuffer(run.stdout[:total * 8], dtype=np.uint64).copy()
    flags_ = np.frombuffer(run.stdout[total * 8:], dtype=np.uint8)[:len(tests) * threads]
    return out, flags_.reshape(len(tests), threads).copy()


_DTYPES = {"signed char": np.int8, "unsigned char": np.uint8, "short": np.int16,
           "unsigned short": np.uint16, "int": np.int32, "unsigned int": np.uint32,
           "long long": np.int64, "unsigned long long": np.uint64, "float": np.float32,
           "double": np.float64}


def _dtype(t):
    return _DTYPES[t.name]
