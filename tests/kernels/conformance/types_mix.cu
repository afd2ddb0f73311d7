// C's types and conversions: char, short, unsigned, long long, size_t, double, bool,
// int32 wrap-around, truncating / and %, shifts, casts, the usual arithmetic conversions.
__global__ void types_mix(const int *a, const int *b, int *iout, unsigned int *uout,
                          long long *llout, double *dout, float *fout, short *sout,
                          signed char *cout)
{
    int i = threadIdx.x;
    int x = a[i], y = b[i];
    iout[5 * i + 0] = x / y;
    iout[5 * i + 1] = x % y;
    iout[5 * i + 2] = x * 65537;                  // wraps around on overflow
    iout[5 * i + 3] = (x >> 2) ^ (y << 3) | (x & 0xff);
    iout[5 * i + 4] = (x < 0) == (threadIdx.x < 0u);  // threadIdx.x is unsigned: false
    uout[2 * i + 0] = (unsigned)x + threadIdx.x;
    uout[2 * i + 1] = x > threadIdx.x;            // x converted to unsigned
    long long big = (long long)x * 3000000000LL;
    llout[i] = big / 7 + (size_t)i;
    dout[2 * i] = 1.0 / y + x;                    // 1.0 is a double
    dout[2 * i + 1] = (double)(float)x / 3.0;
    fout[i] = (float)x / (float)y + 0.1f;
    sout[i] = (short)(x * 1000);
    cout[i] = (signed char)(x + y);
    bool neg = x < 0;
    if (neg && !(y < 0)) iout[5 * i + 4] += 10;
}
