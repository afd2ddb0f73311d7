"""Host declarations of the C, C++ and CUDA headers, for a whole .cu file's host code.

A file from a repository has host code beside its kernels: ``main``, ``cudaMalloc``,
``cudaMemcpy``, ``kernel<<<grid, block>>>(...)``, ``std::vector``, ``std::cout``. nvcc
--cubin (what PyCUDA's `SourceModule` runs) parses it with the real headers and drops it;
the front end reads no header, so clang reads these declarations instead (prelude.py adds
each block whose names the source uses). They are declarations only, of host functions
(no ``__device__``): host code parses, and device code that calls one gets nvcc's error
("calling a __host__ function(...) from a __global__ function(...) is not allowed").
Nothing here ever runs. Where host code uses something declared here only in part, or not
at all, clang's errors inside host code are set aside (program.py), as the code is.

Each block: (the names that pull it in, its text, the names it needs from other blocks
or the prelude). A block comes after the blocks it needs (prelude.py keeps this order).
"""

from __future__ import annotations

import re

# --- the CUDA runtime API (cuda_runtime_api.h, driver_types.h), the part samples use
CUDA_RUNTIME = r"""
enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3, cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101, cudaErrorNoDevice = 100, cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700, cudaErrorLaunchFailure = 719, cudaErrorUnknown = 999 };
typedef cudaError cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10, cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrIntegrated = 18, cudaDevAttrComputeMode = 20,
  cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaComputeMode { cudaComputeModeDefault = 0, cudaComputeModeExclusive = 1,
  cudaComputeModeProhibited = 2, cudaComputeModeExclusiveProcess = 3 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1,
  cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0, cudaSharedMemBankSizeFourByte = 1,
  cudaSharedMemBankSizeEightByte = 2 };
enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1, cudaEventDefault = 0,
  cudaEventBlockingSync = 1, cudaEventDisableTiming = 2, cudaMemAttachGlobal = 1,
  cudaHostAllocDefault = 0, cudaHostAllocPortable = 1, cudaHostAllocMapped = 2,
  cudaCpuDeviceId = -1 };
struct cudaDeviceProp { char name[256]; size_t totalGlobalMem; size_t sharedMemPerBlock;
  int regsPerBlock; int warpSize; size_t memPitch; int maxThreadsPerBlock;
  int maxThreadsDim[3]; int maxGridSize[3]; int clockRate; size_t totalConstMem; int major;
  int minor; int multiProcessorCount; int memoryClockRate; int memoryBusWidth;
  int l2CacheSize; int maxThreadsPerMultiProcessor; size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor; size_t sharedMemPerBlockOptin; int concurrentKernels;
  int integrated; int computeMode; int asyncEngineCount; int unifiedAddressing;
  int managedMemory; int deviceOverlap; int pciBusID; int pciDeviceID; int ECCEnabled;
  int kernelExecTimeoutEnabled; int canMapHostMemory; int maxBlocksPerMultiProcessor; };
cudaError_t cudaMalloc(void **devPtr, size_t size);
template <class T> cudaError_t cudaMalloc(T **devPtr, size_t size);
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags = 1);
template <class T> cudaError_t cudaMallocManaged(T **devPtr, size_t size, unsigned int flags = 1);
cudaError_t cudaMallocHost(void **ptr, size_t size);
template <class T> cudaError_t cudaMallocHost(T **ptr, size_t size, unsigned int flags = 0);
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags);
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                         size_t width, size_t height, cudaMemcpyKind kind);
template <class T> cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src,
    size_t count, size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice);
template <class T> cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol,
    size_t count, size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream = 0);
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                 cudaStream_t stream = 0);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaThreadSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache config);
cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig config);
template <class T> cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value);
template <class T> cudaError_t cudaFuncSetCacheConfig(T *func, cudaFuncCache config);
template <class T> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, T func, int blockSize, size_t dynamicSMemSize);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaProfilerStart();
cudaError_t cudaProfilerStop();
template <class G, class B> int cudaConfigureCall(G gridDim, B blockDim, size_t sharedMem = 0,
                                                 cudaStream_t stream = 0);
"""

# --- the C library's host functions (stdio.h, stdlib.h, string.h, time.h, sys/time.h)
C_LIBRARY = r"""
struct __tl_FILE;
typedef __tl_FILE FILE;
extern FILE *stdin, *stdout, *stderr;
enum { EXIT_SUCCESS = 0, EXIT_FAILURE = 1, RAND_MAX = 2147483647, EOF = -1, SEEK_SET = 0,
       SEEK_CUR = 1, SEEK_END = 2 };
int fprintf(FILE *stream, const char *format, ...);
int sprintf(char *s, const char *format, ...);
int snprintf(char *s, size_t n, const char *format, ...);
int puts(const char *s);
int putchar(int c);
int fputs(const char *s, FILE *stream);
int fflush(FILE *stream);
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *stream);
size_t fread(void *ptr, size_t size, size_t n, FILE *stream);
size_t fwrite(const void *ptr, size_t size, size_t n, FILE *stream);
int fscanf(FILE *stream, const char *format, ...);
int scanf(const char *format, ...);
int sscanf(const char *s, const char *format, ...);
char *fgets(char *s, int n, FILE *stream);
int fseek(FILE *stream, long offset, int whence);
long ftell(FILE *stream);
int getchar();
void perror(const char *s);
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);
void free(void *p);
void *aligned_alloc(size_t alignment, size_t size);
int posix_memalign(void **p, size_t alignment, size_t size);
void exit(int status);
void abort();
int atexit(void (*f)());
int atoi(const char *s);
long atol(const char *s);
double atof(const char *s);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
double strtod(const char *s, char **end);
float strtof(const char *s, char **end);
int rand();
void srand(unsigned int seed);
double drand48();
void srand48(long seed);
char *getenv(const char *name);
int system(const char *command);
void qsort(void *base, size_t n, size_t size, int (*compare)(const void *, const void *));
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
size_t strlen(const char *s);
char *strcpy(char *d, const char *s);
char *strncpy(char *d, const char *s, size_t n);
char *strcat(char *d, const char *s);
char *strstr(const char *s, const char *t);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strdup(const char *s);
int memcmp(const void *a, const void *b, size_t n);
void *memmove(void *d, const void *s, size_t n);
typedef long time_t;
typedef long clock_t;
enum { CLOCKS_PER_SEC = 1000000 };
time_t time(time_t *t);
clock_t clock();
struct timeval { long tv_sec; long tv_usec; };
struct timespec { long tv_sec; long tv_nsec; };
int gettimeofday(struct timeval *tv, void *tz);
int clock_gettime(int clock, struct timespec *ts);
enum { CLOCK_REALTIME = 0, CLOCK_MONOTONIC = 1 };
unsigned int sleep(unsigned int seconds);
int usleep(unsigned int usec);
"""

# --- the C++ library: one block per header family, host declarations only
STD_BASE = r"""
namespace std {
typedef unsigned long size_t;
typedef long ptrdiff_t;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T &> { typedef T type; };
template <class T> struct remove_reference<T &&> { typedef T type; };
template <class T> T &&forward(typename remove_reference<T>::type &t);
template <class T> T &&forward(typename remove_reference<T>::type &&t);
template <class E> class initializer_list {
  const E *__begin; unsigned long __size;
 public:
  initializer_list();
  unsigned long size() const;
  const E *begin() const;
  const E *end() const;
};
template <class C> auto begin(C &c) -> decltype(c.begin());
template <class C> auto end(C &c) -> decltype(c.end());
template <class C> auto begin(const C &c) -> decltype(c.begin());
template <class C> auto end(const C &c) -> decltype(c.end());
template <class T, unsigned long N> T *begin(T (&a)[N]);
template <class T, unsigned long N> T *end(T (&a)[N]);
template <class C> auto size(const C &c) -> decltype(c.size());
template <class T, unsigned long N> unsigned long size(const T (&a)[N]);
template <class C> auto data(C &c) -> decltype(c.data());
template <class C> bool empty(const C &c);
template <class A, class B> struct pair {
  A first; B second;
  pair(); pair(const A &a, const B &b);
};
template <class A, class B> pair<A, B> make_pair(A a, B b);
template <class T> struct allocator { allocator(); };
}
"""
# <type_traits> (C++17): class templates and constants only, so device code uses them as
# nvcc's does (nvcc's cuda_runtime.h, included in every .cu file, brings <cmath> and with it
# libstdc++'s <type_traits>: `std::enable_if_t` needs no #include there). After STD_BASE,
# whose remove_reference it uses; declval has no body, as it is only for decltype.
STD_TYPE_TRAITS = r"""
namespace std {
template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  constexpr operator value_type() const noexcept { return value; }
  constexpr value_type operator()() const noexcept { return value; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T, class U> struct is_same : false_type {};
template <class T> struct is_same<T, T> : true_type {};
template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv {
  typedef typename remove_volatile<typename remove_const<T>::type>::type type; };
template <class T> struct remove_pointer { typedef T type; };
template <class T> struct remove_pointer<T *> { typedef T type; };
template <class T> struct remove_pointer<T *const> { typedef T type; };
template <class T> struct remove_pointer<T *volatile> { typedef T type; };
template <class T> struct remove_pointer<T *const volatile> { typedef T type; };
template <class T> struct add_const { typedef const T type; };
template <class T> struct add_pointer { typedef typename remove_reference<T>::type *type; };
template <class T> struct add_rvalue_reference { typedef T &&type; };
template <> struct add_rvalue_reference<void> { typedef void type; };
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> using add_const_t = typename add_const<T>::type;
template <class T> using add_pointer_t = typename add_pointer<T>::type;
template <class T> typename add_rvalue_reference<T>::type declval() noexcept;
template <class T> struct __tl_integral : false_type {};
template <> struct __tl_integral<bool> : true_type {};
template <> struct __tl_integral<char> : true_type {};
template <> struct __tl_integral<signed char> : true_type {};
template <> struct __tl_integral<unsigned char> : true_type {};
template <> struct __tl_integral<wchar_t> : true_type {};
template <> struct __tl_integral<char16_t> : true_type {};
template <> struct __tl_integral<char32_t> : true_type {};
template <> struct __tl_integral<short> : true_type {};
template <> struct __tl_integral<unsigned short> : true_type {};
template <> struct __tl_integral<int> : true_type {};
template <> struct __tl_integral<unsigned int> : true_type {};
template <> struct __tl_integral<long> : true_type {};
template <> struct __tl_integral<unsigned long> : true_type {};
template <> struct __tl_integral<long long> : true_type {};
template <> struct __tl_integral<unsigned long long> : true_type {};
template <class T> struct __tl_floating : false_type {};
template <> struct __tl_floating<float> : true_type {};
template <> struct __tl_floating<double> : true_type {};
template <> struct __tl_floating<long double> : true_type {};
template <class T> struct is_integral : __tl_integral<typename remove_cv<T>::type> {};
template <class T> struct is_floating_point : __tl_floating<typename remove_cv<T>::type> {};
template <class T> struct is_arithmetic
    : bool_constant<is_integral<T>::value || is_floating_point<T>::value> {};
template <class T, bool = is_arithmetic<T>::value> struct __tl_signed : false_type {};
template <class T> struct __tl_signed<T, true> : bool_constant<T(-1) < T(0)> {};
template <class T, bool = is_arithmetic<T>::value> struct __tl_unsigned : false_type {};
template <class T> struct __tl_unsigned<T, true> : bool_constant<T(0) < T(-1)> {};
template <class T> struct is_signed : __tl_signed<T> {};
template <class T> struct is_unsigned : __tl_unsigned<T> {};
template <class T> struct is_void : is_same<void, typename remove_cv<T>::type> {};
template <class T> struct __tl_pointer : false_type {};
template <class T> struct __tl_pointer<T *> : true_type {};
template <class T> struct is_pointer : __tl_pointer<typename remove_cv<T>::type> {};
template <class T> struct is_reference : false_type {};
template <class T> struct is_reference<T &> : true_type {};
template <class T> struct is_reference<T &&> : true_type {};
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_array : false_type {};
template <class T> struct is_array<T[]> : true_type {};
template <class T, unsigned long N> struct is_array<T[N]> : true_type {};
template <class T, class U> inline constexpr bool is_same_v = is_same<T, U>::value;
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T> inline constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T> inline constexpr bool is_void_v = is_void<T>::value;
template <class T> inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> inline constexpr bool is_reference_v = is_reference<T>::value;
template <class T> inline constexpr bool is_const_v = is_const<T>::value;
template <class T> inline constexpr bool is_array_v = is_array<T>::value;
}
"""
STD_STRING = r"""
namespace std {
class string {
  char *__data; unsigned long __size;
 public:
  static const unsigned long npos = (unsigned long)-1;
  string(); string(const char *s); string(const char *s, unsigned long n);
  string(unsigned long n, char c); string(const string &s);
  string &operator=(const string &s); string &operator=(const char *s);
  string &operator+=(const string &s); string &operator+=(const char *s);
  string &operator+=(char c);
  const char *c_str() const; const char *data() const;
  unsigned long size() const; unsigned long length() const; bool empty() const;
  char &operator[](unsigned long i); const char &operator[](unsigned long i) const;
  string substr(unsigned long pos = 0, unsigned long n = npos) const;
  unsigned long find(const string &s, unsigned long pos = 0) const;
  unsigned long find(const char *s, unsigned long pos = 0) const;
  unsigned long find(char c, unsigned long pos = 0) const;
  unsigned long rfind(const string &s, unsigned long pos = npos) const;
  int compare(const string &s) const;
  void push_back(char c); void clear(); void resize(unsigned long n);
  char *begin(); char *end(); const char *begin() const; const char *end() const;
};
string operator+(const string &a, const string &b);
string operator+(const string &a, const char *b);
string operator+(const char *a, const string &b);
string operator+(const string &a, char b);
bool operator==(const string &a, const string &b);
bool operator==(const string &a, const char *b);
bool operator!=(const string &a, const string &b);
bool operator!=(const string &a, const char *b);
bool operator<(const string &a, const string &b);
string to_string(int v); string to_string(long v); string to_string(unsigned v);
string to_string(unsigned long v); string to_string(long long v); string to_string(float v);
string to_string(double v);
int stoi(const string &s, unsigned long *pos = 0, int base = 10);
long stol(const string &s, unsigned long *pos = 0, int base = 10);
float stof(const string &s, unsigned long *pos = 0);
double stod(const string &s, unsigned long *pos = 0);
}
"""
STD_STREAMS = r"""
namespace std {
class ios_base {
 public:
  enum openmode { app = 1, ate = 2, binary = 4, in = 8, out = 16, trunc = 32 };
  enum fmtflags { fixed = 4, scientific = 256 };
  int precision(int n); int precision() const; int width(int n);
  fmtflags setf(fmtflags f); fmtflags flags() const;
};
class ostream : public ios_base {
 public:
  ostream &operator<<(const char *s); ostream &operator<<(char c);
  ostream &operator<<(bool v); ostream &operator<<(int v); ostream &operator<<(unsigned v);
  ostream &operator<<(long v); ostream &operator<<(unsigned long v);
  ostream &operator<<(long long v); ostream &operator<<(unsigned long long v);
  ostream &operator<<(float v); ostream &operator<<(double v);
  ostream &operator<<(const void *p); ostream &operator<<(const string &s);
  ostream &operator<<(ostream &(*manipulator)(ostream &));
  template <class T> ostream &operator<<(const T &v);
  ostream &write(const char *s, long n); ostream &flush(); ostream &put(char c);
  bool good() const; bool fail() const; explicit operator bool() const;
};
class istream : public ios_base {
 public:
  template <class T> istream &operator>>(T &v);
  istream &read(char *s, long n); istream &seekg(long pos); istream &seekg(long off, int dir);
  long tellg(); bool good() const; bool eof() const; bool fail() const;
  explicit operator bool() const; istream &ignore(long n = 1, int delim = -1);
};
class iostream : public ostream, public istream {};
extern ostream cout, cerr, clog;
extern istream cin;
ostream &endl(ostream &os); ostream &flush(ostream &os);
ostream &fixed(ostream &os); ostream &scientific(ostream &os); ostream &defaultfloat(ostream &os);
ostream &left(ostream &os); ostream &right(ostream &os); ostream &boolalpha(ostream &os);
ostream &hex(ostream &os); ostream &dec(ostream &os);
struct __tl_manipulator {};
__tl_manipulator setw(int n); __tl_manipulator setprecision(int n);
__tl_manipulator setfill(char c);
class fstream : public iostream {
 public:
  fstream(); explicit fstream(const char *path, int mode = in | out);
  explicit fstream(const string &path, int mode = in | out);
  void open(const char *path, int mode = in | out); void open(const string &path, int mode = in | out);
  bool is_open() const; void close();
};
class ifstream : public istream {
 public:
  ifstream(); explicit ifstream(const char *path, int mode = in);
  explicit ifstream(const string &path, int mode = in);
  void open(const char *path, int mode = in); bool is_open() const; void close();
};
class ofstream : public ostream {
 public:
  ofstream(); explicit ofstream(const char *path, int mode = out);
  explicit ofstream(const string &path, int mode = out);
  void open(const char *path, int mode = out); bool is_open() const; void close();
};
class stringstream : public iostream {
 public: stringstream(); explicit stringstream(const string &s); string str() const;
  void str(const string &s);
};
class ostringstream : public ostream { public: ostringstream(); string str() const; };
class istringstream : public istream { public: explicit istringstream(const string &s); };
istream &getline(istream &is, string &s);
istream &getline(istream &is, string &s, char delim);
}
"""
STD_CONTAINERS = r"""
namespace std {
template <class T, class A = allocator<T>> class vector {
  T *__data; unsigned long __size;
 public:
  typedef T value_type; typedef unsigned long size_type; typedef T *iterator;
  typedef const T *const_iterator; typedef T &reference;
  vector(); explicit vector(unsigned long n); vector(unsigned long n, const T &value);
  vector(initializer_list<T> values); vector(const vector &other);
  template <class It> vector(It first, It last);
  vector &operator=(const vector &other);
  T &operator[](unsigned long i); const T &operator[](unsigned long i) const;
  T &at(unsigned long i); const T &at(unsigned long i) const;
  T *data(); const T *data() const;
  unsigned long size() const; unsigned long capacity() const; bool empty() const;
  void resize(unsigned long n); void resize(unsigned long n, const T &value);
  void reserve(unsigned long n); void clear(); void push_back(const T &value);
  template <class... Args> void emplace_back(Args &&...args); void pop_back();
  void assign(unsigned long n, const T &value);
  template <class It> void assign(It first, It last);
  T *begin(); T *end(); const T *begin() const; const T *end() const;
  const T *cbegin() const; const T *cend() const;
  T &front(); T &back(); const T &front() const; const T &back() const;
  T *insert(const T *pos, const T &value); T *erase(const T *pos);
  void swap(vector &other);
};
template <class T, unsigned long N> struct array {
  T __elems[N ? N : 1];
  T &operator[](unsigned long i); const T &operator[](unsigned long i) const;
  T *data(); const T *data() const; unsigned long size() const;
  T *begin(); T *end(); const T *begin() const; const T *end() const;
  void fill(const T &value);
};
template <class K, class V> class map {
 public:
  map(); V &operator[](const K &key); V &at(const K &key); unsigned long size() const;
  unsigned long count(const K &key) const; bool empty() const;
  pair<const K, V> *begin(); pair<const K, V> *end(); pair<const K, V> *find(const K &key);
};
template <class K, class V> class unordered_map : public map<K, V> {};
template <class T> class set {
 public: set(); void insert(const T &v); unsigned long count(const T &v) const;
  unsigned long size() const; const T *begin() const; const T *end() const;
};
template <class T> class unordered_set : public set<T> {};
template <class T> class deque : public vector<T> {};
template <class T> class list : public vector<T> {};
template <class T> class queue {
 public: void push(const T &v); void pop(); T &front(); bool empty() const;
  unsigned long size() const;
};
template <class T> class function;
template <class R, class... Args> class function<R(Args...)> {
 public: function(); template <class F> function(F f) {} R operator()(Args... args) const;
  explicit operator bool() const;
};
template <class T> class unique_ptr {
 public: unique_ptr(); explicit unique_ptr(T *p); T *get() const; T *operator->() const;
  T &operator*() const; T &operator[](unsigned long i) const; void reset(T *p = 0);
  T *release();
};
template <class T> class unique_ptr<T[]> {
 public: unique_ptr(); explicit unique_ptr(T *p); T *get() const; T &operator[](unsigned long i) const;
  void reset(T *p = 0);
};
template <class T> class shared_ptr {
 public: shared_ptr(); explicit shared_ptr(T *p); T *get() const; T *operator->() const;
  T &operator*() const;
};
template <class T, class... Args> unique_ptr<T> make_unique(Args &&...args);
template <class T> unique_ptr<T> make_unique(unsigned long n);
template <class T, class... Args> shared_ptr<T> make_shared(Args &&...args);
}
"""
STD_ALGORITHM = r"""
namespace std {
template <class T> const T &min(const T &a, const T &b);
template <class T> const T &max(const T &a, const T &b);
template <class T, class C> const T &min(const T &a, const T &b, C compare) { return a; }
template <class T, class C> const T &max(const T &a, const T &b, C compare) { return a; }
template <class T> T min(initializer_list<T> values) { return *(T *)0; }
template <class T> T max(initializer_list<T> values) { return *(T *)0; }
template <class T> const T &clamp(const T &v, const T &lo, const T &hi);
template <class T> void swap(T &a, T &b) {}
template <class It, class T> void fill(It first, It last, const T &value) {}
template <class It, class N, class T> It fill_n(It first, N n, const T &value) { return *(It *)0; }
template <class It, class G> void generate(It first, It last, G generator) {}
template <class It, class N, class G> It generate_n(It first, N n, G generator) { return *(It *)0; }
template <class It> void sort(It first, It last) {}
template <class It, class C> void sort(It first, It last, C compare) {}
template <class It> void stable_sort(It first, It last) {}
template <class It, class C> void stable_sort(It first, It last, C compare) {}
template <class It> void reverse(It first, It last) {}
template <class It, class G> void shuffle(It first, It last, G &&generator) {}
template <class It, class O> O copy(It first, It last, O out) { return *(O *)0; }
template <class It, class N, class O> O copy_n(It first, N n, O out) { return *(O *)0; }
template <class It, class O, class F> O transform(It first, It last, O out, F f) { return *(O *)0; }
template <class It, class It2, class O, class F> O transform(It first, It last, It2 first2,
                                                             O out, F f) { return out; }
template <class It, class F> F for_each(It first, It last, F f) { return *(F *)0; }
template <class It, class T> It find(It first, It last, const T &value) { return *(It *)0; }
template <class It, class P> It find_if(It first, It last, P pred) { return *(It *)0; }
template <class It, class T> long count(It first, It last, const T &value) { return *(long *)0; }
template <class It, class P> long count_if(It first, It last, P pred) { return *(long *)0; }
template <class It> It max_element(It first, It last) { return *(It *)0; }
template <class It> It min_element(It first, It last) { return *(It *)0; }
template <class It, class C> It max_element(It first, It last, C compare) { return *(It *)0; }
template <class It, class C> It min_element(It first, It last, C compare) { return *(It *)0; }
template <class It, class It2> bool equal(It first, It last, It2 first2) { return *(bool *)0; }
template <class It, class P> bool all_of(It first, It last, P pred) { return *(bool *)0; }
template <class It, class P> bool any_of(It first, It last, P pred) { return *(bool *)0; }
template <class It, class P> bool none_of(It first, It last, P pred) { return *(bool *)0; }
template <class It, class T> It lower_bound(It first, It last, const T &value) { return *(It *)0; }
template <class It, class T> It upper_bound(It first, It last, const T &value) { return *(It *)0; }
template <class It, class T> T accumulate(It first, It last, T init) { return *(T *)0; }
template <class It, class T, class Op> T accumulate(It first, It last, T init, Op op) { return *(T *)0; }
template <class It, class T> void iota(It first, It last, T value) {}
template <class It, class O> O partial_sum(It first, It last, O out) { return *(O *)0; }
template <class It, class O> O inclusive_scan(It first, It last, O out) { return *(O *)0; }
template <class It, class O, class T> O exclusive_scan(It first, It last, O out, T init) { return *(O *)0; }
template <class It, class It2, class T> T inner_product(It first, It last, It2 first2, T init) { return *(T *)0; }
template <class It, class T> T reduce(It first, It last, T init) { return *(T *)0; }
template <class T> struct plus { T operator()(const T &a, const T &b) const; };
template <class T> struct multiplies { T operator()(const T &a, const T &b) const; };
template <class T> struct less { bool operator()(const T &a, const T &b) const; };
template <class T> struct greater { bool operator()(const T &a, const T &b) const; };
template <class T> struct numeric_limits {
  static const bool is_integer = false; static const bool is_signed = true;
  static const int digits = 0;
  static T max(); static T min(); static T lowest(); static T epsilon();
  static T infinity(); static T quiet_NaN(); static T denorm_min();
};
class exception { public: exception(); const char *what() const; };
class logic_error : public exception {
 public: explicit logic_error(const char *what); explicit logic_error(const string &what); };
class runtime_error : public exception {
 public: explicit runtime_error(const char *what); explicit runtime_error(const string &what); };
class invalid_argument : public logic_error {
 public: explicit invalid_argument(const char *what); explicit invalid_argument(const string &what); };
class out_of_range : public logic_error {
 public: explicit out_of_range(const char *what); explicit out_of_range(const string &what); };
class length_error : public logic_error {
 public: explicit length_error(const char *what); explicit length_error(const string &what); };
class domain_error : public logic_error {
 public: explicit domain_error(const char *what); explicit domain_error(const string &what); };
class range_error : public runtime_error {
 public: explicit range_error(const char *what); explicit range_error(const string &what); };
class overflow_error : public runtime_error {
 public: explicit overflow_error(const char *what); explicit overflow_error(const string &what); };
class bad_alloc : public exception { public: bad_alloc(); };
[[noreturn]] void terminate();
}
"""
# std:: names of the C library (<cstdlib>, <cstdio>, <cstring>): the C functions themselves
STD_C = r"""
namespace std {
using ::exit; using ::abort; using ::rand; using ::srand; using ::malloc; using ::calloc;
using ::free; using ::atoi; using ::atof; using ::strcmp; using ::strncmp; using ::strlen;
using ::strcpy; using ::memcmp; using ::fprintf; using ::sprintf; using ::snprintf;
using ::puts; using ::fflush; using ::fopen; using ::fclose; using ::FILE; using ::getenv;
using ::qsort; using ::time; using ::clock; using ::strtol; using ::strtod;
}
"""
STD_CHRONO = r"""
namespace std {
template <long N, long D = 1> struct ratio { static const long num = N; static const long den = D; };
typedef ratio<1, 1000000000> nano; typedef ratio<1, 1000000> micro; typedef ratio<1, 1000> milli;
namespace chrono {
template <class Rep, class Period = ratio<1>> class duration {
 public:
  duration(); template <class R2> duration(const R2 &r);
  template <class R2, class P2> duration(const duration<R2, P2> &d);
  Rep count() const;
};
template <class R, class P> duration<R, P> operator+(const duration<R, P> &a, const duration<R, P> &b);
template <class R, class P> duration<R, P> operator-(const duration<R, P> &a, const duration<R, P> &b);
typedef duration<long, nano> nanoseconds; typedef duration<long, micro> microseconds;
typedef duration<long, milli> milliseconds; typedef duration<long> seconds;
template <class Clock> class time_point {
 public: time_point(); duration<long, nano> time_since_epoch() const;
};
template <class C> duration<long, nano> operator-(const time_point<C> &a, const time_point<C> &b);
struct high_resolution_clock {
  typedef duration<long, nano> duration; typedef chrono::time_point<high_resolution_clock> time_point;
  static time_point now();
};
typedef high_resolution_clock steady_clock;
typedef high_resolution_clock system_clock;
template <class To, class R, class P> To duration_cast(const duration<R, P> &d);
}
}
"""
STD_RANDOM = r"""
namespace std {
class random_device { public: random_device(); unsigned int operator()(); };
class mt19937 {
 public: mt19937(); explicit mt19937(unsigned long seed); unsigned int operator()();
  void seed(unsigned long seed);
};
typedef mt19937 mt19937_64;
typedef mt19937 default_random_engine;
typedef mt19937 minstd_rand;
template <class T = double> class uniform_real_distribution {
 public: uniform_real_distribution(T a = 0, T b = 1); template <class G> T operator()(G &g);
};
template <class T = int> class uniform_int_distribution {
 public: uniform_int_distribution(T a = 0, T b = 2147483647); template <class G> T operator()(G &g);
};
template <class T = double> class normal_distribution {
 public: normal_distribution(T mean = 0, T stddev = 1); template <class G> T operator()(G &g);
};
template <class T = int> class bernoulli_distribution {
 public: bernoulli_distribution(double p = 0.5); template <class G> bool operator()(G &g);
};
}
"""
STD_THREAD = r"""
namespace std {
class thread { public: thread(); template <class F, class... A> explicit thread(F f, A... a) {}
  void join(); bool joinable() const; };
class mutex { public: mutex(); void lock(); void unlock(); };
template <class M> class lock_guard { public: explicit lock_guard(M &m); };
}
"""

# --- CUDA libraries' host APIs (cublas_v2.h, cublasLt.h, curand.h)
CUBLAS = r"""
typedef struct cublasContext *cublasHandle_t;
typedef struct cublasLtContext *cublasLtHandle_t;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3, CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15, CUBLAS_STATUS_LICENSE_ERROR = 16 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
enum cublasComputeType_t { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 };
enum cudaDataType_t { CUDA_R_16F = 2, CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 };
typedef cudaDataType_t cudaDataType;
cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
    cublasOperation_t transb, int m, int n, int k, const float *alpha, const float *A,
    int lda, const float *B, int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
    cublasOperation_t transb, int m, int n, int k, const double *alpha, const double *A,
    int lda, const double *B, int ldb, const double *beta, double *C, int ldc);
cublasStatus_t cublasSgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
    const float *alpha, const float *A, int lda, const float *x, int incx,
    const float *beta, float *y, int incy);
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
    cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A,
    cudaDataType_t Atype, int lda, const void *B, cudaDataType_t Btype, int ldb,
    const void *beta, void *C, cudaDataType_t Ctype, int ldc,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
    cublasOperation_t transb, int m, int n, int k, const float *alpha, const float *A,
    int lda, long strideA, const float *B, int ldb, long strideB, const float *beta,
    float *C, int ldc, long strideC, int batchCount);
cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);
const char *cublasGetStatusString(cublasStatus_t status);
"""
CURAND = r"""
typedef struct curandGenerator_st *curandGenerator_t;
enum curandStatus_t { CURAND_STATUS_SUCCESS = 0 };
enum curandRngType_t { CURAND_RNG_PSEUDO_DEFAULT = 100, CURAND_RNG_PSEUDO_XORWOW = 101,
  CURAND_RNG_PSEUDO_MT19937 = 141, CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161 };
curandStatus_t curandCreateGenerator(curandGenerator_t *generator, curandRngType_t type);
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t generator,
                                                  unsigned long long seed);
curandStatus_t curandGenerateUniform(curandGenerator_t generator, float *out, size_t n);
curandStatus_t curandGenerateNormal(curandGenerator_t generator, float *out, size_t n,
                                    float mean, float stddev);
curandStatus_t curandDestroyGenerator(curandGenerator_t generator);
"""


def _names(text: str, pattern: str) -> frozenset:
    return frozenset(n for n in re.findall(r"[A-Za-z_]\w*", text) if re.match(pattern, n))


_RUNTIME_NAMES = _names(CUDA_RUNTIME, r"cuda[A-Z]|CUstream|CUevent")
_STD_WORDS = r"[a-z_]+\w*$"
_KEYWORDS = {"namespace", "template", "class", "typename", "struct", "public", "const",
             "unsigned", "long", "int", "char", "bool", "float", "double", "void", "explicit",
             "operator", "typedef", "static", "auto", "decltype", "return", "enum", "extern",
             "private", "sizeof", "in", "out", "app", "ate", "trunc", "binary", "left",
             "right", "hex", "dec", "first", "second", "size", "data", "begin", "end",
             "type", "value", "args", "what", "noreturn"}


def _std_names(text: str) -> frozenset:
    """The names a std block declares that a source would spell (std::vector, cout, ...),
    keyword-like words left out."""
    return frozenset(n for n in re.findall(r"\b([a-z_][a-z_0-9]*)\b", text)
                     if n not in _KEYWORDS and not n.startswith("__") and len(n) > 2)


# The headers that declare the C library's host functions (nvcc's cuda_runtime.h brings
# them too): the C_LIBRARY block is read only when the source includes one, so that a
# kernel of its own named `clock` or `exit` never meets these declarations.
_C_HEADERS = frozenset({"stdio.h", "stdlib.h", "string.h", "time.h", "sys/time.h", "unistd.h",
                        "cstdio", "cstdlib", "cstring", "ctime", "cuda_runtime.h", "cuda.h",
                        "cuda_runtime_api.h", "iostream", "cmath", "math.h", "assert.h",
                        "cassert", "algorithm", "vector", "string"})
_C_NAMES = (_names(C_LIBRARY, r".") - _KEYWORDS
            - {"s", "n", "p", "d", "a", "b", "t", "c", "f", "tv", "ts", "tz", "ptr", "path",
               "mode", "stream", "size", "format", "base", "end", "status", "seed", "name",
               "command", "compare", "alignment", "offset", "whence", "seconds", "usec",
               "tv_sec", "tv_usec", "tv_nsec", "size_t", "FILE"}) | {"FILE"}

# (names that pull the block in, its text, what it needs, headers one of which the source
# must include or None): in the order clang reads them
HOST_BLOCKS = [
    (_RUNTIME_NAMES | {"cudaConfigureCall"}, CUDA_RUNTIME, frozenset({"size_t"}), None),
    (_C_NAMES, C_LIBRARY, frozenset({"size_t"}), _C_HEADERS),
    (frozenset({"std"}), STD_BASE, frozenset(), None),
    (_names(STD_TYPE_TRAITS, r"is_|remove_|add_|enable_if|conditional|integral_constant"
                             r"|bool_constant|true_type|false_type|declval"),
     STD_TYPE_TRAITS, frozenset({"std"}), None),
    (frozenset({"string", "to_string", "stoi", "stol", "stof", "stod", "npos"}), STD_STRING,
     frozenset({"std"}), None),
    (_std_names(STD_STREAMS) - {"string", "open", "close", "put", "str", "good", "fail",
                                "eof", "read", "write", "flush", "ignore", "precision",
                                "width", "setf", "flags", "tellg", "seekg"}
     | {"cout", "cerr", "clog", "cin", "endl", "fstream", "ifstream", "ofstream",
        "stringstream", "ostringstream", "istringstream", "setw", "setprecision", "fixed"},
     STD_STREAMS, frozenset({"std", "string"}), None),
    (frozenset({"vector", "array", "map", "unordered_map", "set", "unordered_set", "deque",
                "list", "queue", "function", "unique_ptr", "shared_ptr", "make_unique",
                "make_shared"}), STD_CONTAINERS, frozenset({"std"}), None),
    (frozenset({"min", "max", "swap", "fill", "fill_n", "generate", "generate_n", "sort",
                "stable_sort", "reverse", "shuffle", "copy", "copy_n", "transform",
                "for_each", "find", "find_if", "count", "count_if", "max_element",
                "min_element", "equal", "all_of", "any_of", "none_of", "lower_bound",
                "upper_bound", "accumulate", "iota", "partial_sum", "inclusive_scan",
                "exclusive_scan", "inner_product", "reduce", "plus", "multiplies", "less",
                "greater", "numeric_limits", "exception", "logic_error", "runtime_error",
                "invalid_argument", "out_of_range", "length_error", "domain_error",
                "range_error", "overflow_error", "bad_alloc", "terminate", "clamp"}),
     STD_ALGORITHM, frozenset({"std", "string"}), None),
    (frozenset({"exit", "abort", "rand", "srand", "malloc", "free", "atoi", "atof", "strcmp",
                "strlen", "fprintf", "sprintf", "getenv", "qsort", "FILE"}), STD_C,
     frozenset({"std"}) | _C_NAMES, _C_HEADERS),
    (frozenset({"chrono", "ratio", "milli", "micro", "nano"}), STD_CHRONO, frozenset({"std"}),
     None),
    (frozenset({"random_device", "mt19937", "mt19937_64", "default_random_engine",
                "minstd_rand", "uniform_real_distribution", "uniform_int_distribution",
                "normal_distribution", "bernoulli_distribution"}), STD_RANDOM,
     frozenset({"std"}), None),
    (frozenset({"thread", "mutex", "lock_guard"}), STD_THREAD, frozenset({"std"}), None),
    (_names(CUBLAS, r"cublas|CUBLAS|cudaDataType|CUDA_R_"), CUBLAS,
     frozenset({"cudaStream_t"}), None),
    (_names(CURAND, r"curand[A-Z]|CURAND"), CURAND, frozenset({"size_t"}), None),
]
"""(names, text, needs, headers) of every host block; prelude.py adds each whose names the
source uses (and, where `headers` is not None, that includes one of `headers`). Needs that
name another block's names pull that block in too."""

# Records of the blocks: host types the translator never lowers (device code cannot use
# them: clang refuses a call of their host methods from device code).
HOST_RECORDS = frozenset(re.findall(r"\b(?:struct|class)\s+(\w+)\s*[{:]", CUDA_RUNTIME
                                    + C_LIBRARY + CUBLAS + CURAND))
